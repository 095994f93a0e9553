"""Our hooks on top of the shared tool's (`refsim_hooks`): record what priority scheduling and the queue
limit do inside SGLang 0.5.23's scheduler, written as `priority_events.jsonl` beside the tool's files.

  PrefillAdder.preempt_to_schedule   one event per committed preemption: the request it made room for,
                                     the running requests released, their output so far
  Scheduler.send_abort_output        one event per abort (the queue limit's, or a waiting timeout's):
                                     the request, the message
"""
import json
import os

import refsim_hooks as hooks

EVENTS = []


@hooks._after_import("sglang.srt.managers.schedule_policy")
def _patch_preemption(mod):
    adder = mod.PrefillAdder
    preempt = adder.preempt_to_schedule

    def preempt_to_schedule(self, req):
        before = list(self.preempt_list)
        ok = preempt(self, req)
        if ok:
            new = [r for r in self.preempt_list if r not in before]
            EVENTS.append({"type": "preempt", "t": hooks._r(hooks.Sim.clock),
                           "before_iter": len(hooks.Sim.passes) + 1, "for": req.rid,
                           "rids": [r.rid for r in new], "out_so_far": [len(r.output_ids) for r in new]})
        return ok

    adder.preempt_to_schedule = preempt_to_schedule


_patch_tool_scheduler = hooks._PATCHES["sglang.srt.managers.scheduler"]


@hooks._after_import("sglang.srt.managers.scheduler")
def _patch_aborts(mod):
    _patch_tool_scheduler(mod)
    sched = mod.Scheduler
    send = sched.send_abort_output

    def send_abort_output(self, abort_req, req, *args, **kwargs):
        reason = getattr(abort_req, "finished_reason", None) or {}
        EVENTS.append({"type": "abort", "t": hooks._r(hooks.Sim.clock),
                       "before_iter": len(hooks.Sim.passes) + 1, "rid": req.rid,
                       "message": reason.get("message") if isinstance(reason, dict) else str(reason),
                       "waiting": len(self.waiting_queue)})
        return send(self, abort_req, req, *args, **kwargs)

    sched.send_abort_output = send_abort_output


_write_tool_outputs = hooks._write_outputs


def _write_outputs():
    _write_tool_outputs()
    with open(os.path.join(os.environ["REFSIM_OUT"], "priority_events.jsonl"), "w") as f:
        f.writelines(json.dumps(e) + "\n" for e in EVENTS)


hooks._write_outputs = _write_outputs
