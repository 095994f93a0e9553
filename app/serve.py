"""The served app: `streamlit run app/serve.py`. The pages of app/main.py, with the warm-up (app/warm.py)
started as the server starts, before anyone opens a page, and its progress at /warmup.

`streamlit run app/main.py` serves the same app; its warm-up then starts with the first page view.
"""

import sys
from contextlib import asynccontextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `streamlit run app/serve.py` puts app/ on the path, not the repo root
    sys.path.insert(0, str(REPO))

import streamlit as st  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from app import warm  # noqa: E402


@asynccontextmanager
async def lifespan(_app):
    warm.start()
    yield


async def warmup_status(_request) -> JSONResponse:
    """{"total", "done", "failed", "finished", "seconds"}: how far the warm-up is."""
    return JSONResponse(warm.PROGRESS.as_dict())


app = st.App("main.py", lifespan=lifespan, routes=[Route("/warmup", warmup_status)])
