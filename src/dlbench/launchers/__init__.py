"""Launchers: how a trial's worker starts the processes its case needs.

A case on one process (every single-device case, and the strategies that hold
several replicas in one process) runs in the trial's worker itself. A case with
one process per replica (ddp, multiworker) is launched by `multiprocess`: the
worker starts one rank process per replica, relays their events to the runner
as one stream, and combines their measurements (`merge`).
"""
