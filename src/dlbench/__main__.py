"""`python -m dlbench` is the same as the `dlbench` console script."""

from dlbench.cli import main

if __name__ == "__main__":
    main()
