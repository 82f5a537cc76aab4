"""kgbias dashboard: the router. Run with ``streamlit run dashboard.py``.

Pages live in ``pages/`` and are listed here explicitly; add a page by adding one ``st.Page``.
"""

import streamlit as st

st.set_page_config(page_title="kgbias: gender bias in knowledge-graph embeddings", layout="wide")

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/leaderboard:", default=True),
    st.Page("pages/occupation_explorer.py", title="Occupation explorer", icon=":material/person_search:"),
    st.Page("pages/influential_triples.py", title="Influential triples", icon=":material/hub:"),
    st.Page("pages/attributes.py", title="Attributes (Fisher et al.)", icon=":material/balance:"),
    st.Page("pages/model_comparison.py", title="Model comparison", icon=":material/compare:"),
    st.Page("pages/debiasing_lab.py", title="Debiasing lab", icon=":material/science:"),
    st.Page("pages/validation.py", title="Validation", icon=":material/fact_check:"),
    st.Page("pages/findings.py", title="Findings", icon=":material/checklist:"),
]

st.navigation(PAGES).run()
