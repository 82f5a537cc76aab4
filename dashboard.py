"""kgbias dashboard: the router. Run with ``streamlit run dashboard.py``.

Pages live in ``app_pages/`` and are listed here explicitly; add a page by adding one ``st.Page``.
The folder is not called ``pages/``: Streamlit decides once per server, at the first request, whether
a ``pages/`` folder beside the main script exists, and if so a deep link as that first request runs
the page file alone under Streamlit's automatic navigation (lowercase file names, no router); no
setting turns that off (Streamlit 1.67, ``PagesManager.uses_pages_directory``).
"""

import streamlit as st
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from kgbias_app import links, reruns

st.set_page_config(page_title="kgbias: gender bias in knowledge-graph embeddings", layout="wide")

PAGES = [
    st.Page("app_pages/overview.py", title="Overview", icon=":material/leaderboard:", default=True),
    st.Page("app_pages/occupation_explorer.py", title="Occupation explorer", icon=":material/person_search:"),
    st.Page("app_pages/influential_triples.py", title="Influential triples", icon=":material/hub:"),
    st.Page("app_pages/person.py", title="Person", icon=":material/person:", url_path="person"),
    st.Page("app_pages/embedding_space.py", title="Embedding space", icon=":material/scatter_plot:"),
    st.Page("app_pages/attributes.py", title="Attributes (Fisher et al.)", icon=":material/balance:"),
    st.Page("app_pages/model_comparison.py", title="Model comparison", icon=":material/compare:"),
    st.Page("app_pages/debiasing_lab.py", title="Debiasing lab", icon=":material/science:"),
    st.Page("app_pages/validation.py", title="Validation", icon=":material/fact_check:"),
    st.Page("app_pages/findings.py", title="Findings", icon=":material/checklist:"),
]

page = st.navigation(PAGES)
try:
    page.run()
except StopException:
    # A page that stops (waiting for its model) still gets the sidebar's choice into the URL; one
    # that reruns does not: the rerun writes it, as one history entry.
    reruns.rerun_if_asked()  # a page that waits for its model still follows the job that makes it
    links.publish(page.url_path)
    raise
# After the page has read its buttons (a rerun asked for mid-page would lose a click), before the URL is written: a
# run that reruns leaves that to the rerun, so a link's first run applies it again and says again what it refused.
reruns.rerun_if_asked()
links.publish(page.url_path)
