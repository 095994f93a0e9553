"""The copy-link button: the full address of the view on screen, read from the address bar when clicked.

The address bar always carries the view (every setting, the cursor, the tour step: app.state.write_url), so
the button copies `location.href` at the moment of the click, never a link built on an earlier run (the
step-through redraws only its own fragment, so a link written into the page would go stale).
"""

from __future__ import annotations

import streamlit as st

COPY_LINK = """
<div class="ww-copy-link" style="display:flex;align-items:center;gap:0.75rem;flex-wrap:wrap">
  <button type="button" data-testid="wwCopyLink" style="font:inherit;padding:0.35rem 0.9rem;
    border-radius:0.5rem;border:1px solid rgba(49,51,63,0.25);background:#fff;cursor:pointer">
    <svg width="15" height="15" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.2"
      aria-hidden="true" style="vertical-align:-2px"><g transform="rotate(-45 12 12)"><rect x="2" y="8"
      width="11" height="8" rx="4"/><rect x="11" y="8" width="11" height="8" rx="4"/></g></svg>
    Copy link to this view</button>
  <code data-testid="wwCopiedLink" style="overflow-wrap:anywhere"></code>
</div>
<script>
(() => {
  for (const button of document.querySelectorAll('[data-testid="wwCopyLink"]')) {
    const shown = button.parentElement.querySelector('[data-testid="wwCopiedLink"]');
    const say = (ok, url) => { shown.textContent = (ok ? "Copied: " : "Copy this: ") + url; };
    const byHand = (url) => {  // no Clipboard API (plain http on another host): select-and-copy
      const area = document.createElement("textarea");
      area.value = url; document.body.appendChild(area); area.select();
      let ok = false; try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      area.remove(); say(ok, url);
    };
    button.onclick = () => {
      const url = window.location.href;
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(url).then(() => say(true, url), () => byHand(url));
      } else { byHand(url); }
    };
  }
})();
</script>
"""


def copy_link_ui() -> None:
    """A button that copies the full URL of this view (and shows it)."""
    st.html(COPY_LINK, unsafe_allow_javascript=True)
