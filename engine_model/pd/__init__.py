"""Prefill-decode disaggregation: N prefill and M decode workers, a router, and a KV link between them.

Module map (read in this order):
  config.py   PDConfig: workers per role, DP attention ranks, router, link, allocation policy
  roles.py    per-role settings (SGLang defaults per DP rank), the lockstep pass cost, the policy checks
  router.py   which worker (and which DP rank inside it) gets a request
  transfer.py the KV link: concurrent transfers share NIC bandwidth (max-min fair)
  prefill.py  PrefillRank: bootstrap queue -> PrefillAdder batches (max_new_tokens = 1) -> inflight queue
  decode.py   DecodeRank: prealloc queue -> transfer queue -> running batch, retraction to host
  worker.py   Worker: a server whose DP ranks schedule alone and run each forward pass in lockstep
  cluster.py  Cluster: one request's trip from router to decode, driven by time-stamped messages; the
              topology the run loop (engine_model/simulation.py) steps, like a single server
  figures.py  per-role figures: busy share, batch size, transfer time, reserved-but-idle KV
  attention.py prefill_complete's attention-TP rule: SGLang's refusal, why, and the fix that runs
"""
