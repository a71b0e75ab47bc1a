"""Campaigns: tasks × agents × seeds under a strategy, run by workers on GPU slots or Ray, resumable.

``campaign`` (spec, task selection, the store), ``queue`` (claiming jobs atomically, heartbeats,
requeueing the jobs of dead workers; ``processes`` tells a dead worker), ``job`` (one job: solve + copy into the campaign
store), ``worker`` (the claim loop), ``scheduler`` (slots, the per-GPU lock, finalists),
``backends`` (local processes, Ray), ``payload`` and ``remote`` (a job as bytes, run where
the store is not), ``progress`` (the live standing), ``orchestrator``
(``run_campaign``). docs/run.md.
"""
