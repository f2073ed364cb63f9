"""framewatch dashboard: `streamlit run app.py` (or `framewatch dashboard`).

Reads the store named by FRAMEWATCH_DB (default data/framewatch.db) through a read-only
connection. Pages live in pages/ and read like a description of the UI; data access,
charts and filters live in ui/, SQL in store/queries.py.

To add a page: put the file in pages/ and add an st.Page to NAVIGATION below (a new
section is a new key). Chart ids for presentation mode are listed in ui/page.py CHARTS.
"""

import streamlit as st

from ui import page as frame

st.set_page_config(page_title="framewatch", page_icon=":material/query_stats:", layout="wide")

NAVIGATION = {
    "Framing monitor": [
        st.Page("pages/overview.py", title="Overview", icon=":material/monitoring:", url_path="overview", default=True),
        st.Page("pages/stability.py", title="Stability", icon=":material/timeline:", url_path="stability"),
        st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
    ],
    "Audit": [
        st.Page("pages/hotspots.py", title="Hotspots", icon=":material/local_fire_department:", url_path="hotspots"),
        st.Page("pages/bundle.py", title="Bundle", icon=":material/view_column:", url_path="bundle"),
        st.Page("pages/review_queue.py", title="Review queue", icon=":material/rule:", url_path="review_queue"),
        st.Page("pages/search.py", title="Search", icon=":material/search:", url_path="search"),
    ],
    "Operations": [
        st.Page("pages/runs.py", title="Runs and feeds", icon=":material/rss_feed:", url_path="runs"),
        st.Page("pages/alerts.py", title="Alerts", icon=":material/notifications:", url_path="alerts"),
    ],
    "Stereotypes": [
        st.Page("pages/stereo.py", title="Stereotype probe", icon=":material/public:", url_path="stereo"),
        st.Page("pages/annotate.py", title="Annotate", icon=":material/edit_note:", url_path="annotate"),
    ],
    "About": [
        st.Page("pages/methods.py", title="Methods", icon=":material/menu_book:", url_path="methods"),
    ],
}

current = st.navigation(NAVIGATION)
frame.frame(current)
current.run()
