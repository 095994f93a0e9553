"""The pass kinds as every chart and table names them, and the row budget every chart's frame stays under."""

from engine_model import PassKind

PHASES = ("prefill chunk", "decode", "mixed", "idle")
PHASE_OF = {PassKind.PREFILL: "prefill chunk", PassKind.DECODE: "decode", PassKind.MIXED: "mixed",
            PassKind.IDLE: "idle"}
MAX_CHART_ROWS = 4_000  # under Altair's 5,000-row default, with room for cursor and label layers
