"""Attributes (Fisher et al.): professions most associated with one value of an attribute vs another."""

import streamlit as st

from kgbias_app import cache, charts, sidebar, texts, widgets
from kgbias_core.measures.fisher import associated_sides

model = sidebar.page_header("Attributes (Fisher et al.)")

with widgets.errors_shown():
    choice = widgets.attribute_choice(model)
    a, b = choice.a_name, choice.b_name
    table = cache.fisher_table(model, choice.relation, choice.value_a, choice.value_b, choice.min_count)
    st.caption(texts.FISHER_READING.format(a=a, b=b, min_count=choice.min_count, n=len(table)))
    if table.empty:
        st.warning(texts.FISHER_TOO_FEW)
        st.stop()
    columns = {"name": "profession", "bias": "b_p", "n_a": f"# {a}", "n_b": f"# {b}"}
    top_a, top_b, fallback = associated_sides(table, k=widgets.TOP_PROFESSIONS)
    left, right = st.columns(2)
    left.subheader(f"Most associated with {a}")
    left.dataframe(top_a[list(columns)].rename(columns=columns), hide_index=True)
    right.subheader(f"Least associated with {a}" if fallback else f"Most associated with {b}")
    if fallback:
        right.info(texts.FISHER_SHARED_OFFSET.format(a=a))
    right.dataframe(top_b[list(columns)].rename(columns=columns), hide_index=True)

    widgets.show_chart(charts.fisher_bars(top_a, top_b, a_name=a, b_name=b), table,
                       caption=texts.FISHER_BARS.format(a=a, b=b),
                       file_name=widgets.csv_name(model.name, "fisher", choice.relation), key="fisher_bars")
