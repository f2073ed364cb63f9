"""Who may write a review. Viewing needs no login; a write needs a reviewer identity.

Two ways to have one, chosen by configuration:
- OIDC through st.login, when `.streamlit/secrets.toml` has an [auth] section (needs Authlib);
  the identity is the signed-in user's email (or name).
- Otherwise a shared reviewer password from the FRAMEWATCH_REVIEWER_PASSWORD environment
  variable; the reviewer types their name and the password, checked in constant time.
With neither configured, reviews are disabled and the page says how to enable them.
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass

import streamlit as st

PASSWORD_ENV = "FRAMEWATCH_REVIEWER_PASSWORD"
_SESSION_KEY = "_fw_reviewer"


@dataclass(frozen=True, slots=True)
class Reviewer:
    name: str
    method: str
    """'oidc' or 'password'."""


def password_matches(given: str, expected: str | None) -> bool:
    """Constant-time comparison; an unset or empty expected password never matches."""
    if not expected or not given:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all: streamlit raises on access
        return False


def mode() -> str:
    """'oidc', 'password' or 'none'."""
    if oidc_configured():
        return "oidc"
    if os.environ.get(PASSWORD_ENV):
        return "password"
    return "none"


def current() -> Reviewer | None:
    m = mode()
    if m == "oidc":
        user = st.user
        if getattr(user, "is_logged_in", False):
            name = user.get("email") or user.get("name") or user.get("sub")
            return Reviewer(str(name), "oidc") if name else None
        return None
    if m == "password":
        return st.session_state.get(_SESSION_KEY)
    return None


def sign_in_panel(key: str = "signin") -> Reviewer | None:
    """Show the current reviewer with a sign-out button, or the way to sign in."""
    reviewer = current()
    m = mode()
    if reviewer:
        cols = st.columns([4, 1])
        cols[0].caption(f"Signed in as reviewer: {reviewer.name} ({reviewer.method})")
        if cols[1].button("Sign out", key=f"{key}_out"):
            if m == "oidc":
                st.logout()
            st.session_state.pop(_SESSION_KEY, None)
            st.rerun()
        return reviewer
    if m == "oidc":
        st.caption("Recording a verdict needs a reviewer identity.")
        if st.button("Sign in to review", key=f"{key}_login"):
            st.login()
        return None
    if m == "password":
        with st.form(f"{key}_form", clear_on_submit=True):
            st.caption("Recording a verdict needs a reviewer identity.")
            name = st.text_input("Your name", max_chars=200)
            password = st.text_input("Reviewer password", type="password")
            if st.form_submit_button("Sign in"):
                if not name.strip():
                    st.error("Enter your name: it is stored with each verdict.")
                elif password_matches(password, os.environ.get(PASSWORD_ENV)):
                    st.session_state[_SESSION_KEY] = Reviewer(name.strip(), "password")
                    st.rerun()
                else:
                    st.error("Wrong reviewer password.")
        return None
    st.info(f"Reviews are off: set {PASSWORD_ENV} for the dashboard process, or configure OIDC sign-in "
            "([auth] in .streamlit/secrets.toml). See docs/DASHBOARD.md.")
    return None
