"""One person's page view at the protocol level: Streamlit's own websocket, no browser.

A room's laptops each draw their own page; what they share is the server. This client asks the server for a
page exactly as the browser's first message does (a `rerun_script` BackMsg naming the page and its query
string) and reads the ForwardMsgs until the script run has finished. The time is the server's answer, sent
in full: every element of the page, charts included, arrived. bench_load.py --client websocket uses it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

DONE = {ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY,
        ForwardMsg.ScriptFinishedStatus.FINISHED_WITH_COMPILE_ERROR}


@dataclass
class Answer:
    seconds: float
    num_bytes: int
    num_charts: int
    problems: list[str]  # an exception or an error box on the page, a compile error


async def view(base: str, path: str, timeout_s: float, agent: str = "who-waits-load") -> Answer:
    """Open `path` ("/page?query") in a new session; the server's whole answer, timed. `agent`: the
    User-Agent it sends (nginx logs it: bench_load.py reads how the sessions spread over the replicas)."""
    page, _, query = path.lstrip("/").partition("?")
    start = time.perf_counter()
    async with websockets.connect(base.replace("http", "ws", 1) + "/_stcore/stream", max_size=None,
                                  subprotocols=["streamlit"], open_timeout=timeout_s,
                                  user_agent_header=agent) as ws:
        msg = BackMsg()
        msg.rerun_script.page_name = page
        msg.rerun_script.query_string = query
        await ws.send(msg.SerializeToString())
        num_bytes, charts, problems = 0, 0, []
        while True:
            left = start + timeout_s - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"{path}: no finished script run within {timeout_s:g} s")
            raw = await asyncio.wait_for(ws.recv(), left)
            num_bytes += len(raw)
            forward = ForwardMsg()
            forward.ParseFromString(raw)
            kind = forward.WhichOneof("type")
            if kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                element = forward.delta.new_element
                what = element.WhichOneof("type")
                charts += what == "vega_lite_chart"
                if what == "exception" or (what == "alert" and element.alert.format == Alert.ERROR):
                    problems.append(what)
            elif kind == "script_finished" and forward.script_finished in DONE:
                if forward.script_finished != ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY:
                    problems.append("compile error")
                return Answer(time.perf_counter() - start, num_bytes, charts, problems)
