"""Attributes (Fisher et al.): professions most associated with one value of an attribute vs another."""

import streamlit as st

from kgbias_app import cache, charts, sidebar, texts, widgets
from kgbias_app.escape import md
from kgbias_app.sections import attributes as section
from kgbias_core.measures.fisher import associated_sides
from kgbias_core.tables import split_small

model = sidebar.page_header("Attributes (Fisher et al.)")

with widgets.errors_shown():
    choice = section.attribute_choice(model)
    a, b = choice.a_name, choice.b_name
    every = cache.fisher_table(model, choice.relation, choice.value_a, choice.value_b, 0)
    table, small = split_small(every, size=every["n_a"] + every["n_b"], minimum=choice.min_count)
    st.caption(texts.FISHER_READING.format(a=md(a), b=md(b), min_count=choice.min_count, n=len(table)))
    if table.empty:
        st.warning(texts.FISHER_TOO_FEW)
    else:
        top_a, top_b, fallback = associated_sides(table, k=widgets.TOP_PROFESSIONS)
        section.associated_tables(top_a, top_b, fallback=fallback, a=a, b=b)
        widgets.show_chart(charts.fisher_bars(top_a, top_b, a_name=a, b_name=b), table,
                           caption=texts.FISHER_BARS.format(a=a, b=b),
                           file_name=widgets.csv_name(model.name, "fisher", choice.relation), key="fisher_bars")
    widgets.too_few(small, ["name", "n_a", "n_b"], ids=["label"], names=widgets.fisher_names(a, b),
                    rule=texts.TOO_FEW_PROFESSIONS.format(minimum=choice.min_count, a=a, b=b))
