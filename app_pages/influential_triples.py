"""Influential triples: the training triples whose removal would move an occupation's B_gr most."""

import streamlit as st

from kgbias_app import cache, charts, links, sidebar, texts, widgets
from kgbias_app.sections import influential_triples as section
from kgbias_core.tables import triples_in_words

model = sidebar.page_header("Influential triples")

with widgets.errors_shown():
    occupation, row, defined = widgets.occupation_section(cache.measures(model))
    widgets.report_download(model, occupation)
    if not defined:
        st.warning(texts.NEEDS_BOTH_GENDERS)
        st.stop()

    section.negatives_badge(model, occupation)
    k = links.number(st.slider, "Triples per direction", 5, 100, section.TOP_TRIPLES, key="top_k", what="k")
    shown = section.triple_filters(triples_in_words(cache.influence_extremes(model, occupation, k)))
    st.caption(texts.INFLUENCE_READING)
    selected = section.selected_triples(shown)
    widgets.download(shown, widgets.csv_name(model.name, occupation, "influential"), key="extremes:csv",
                     label="Download these triples (CSV)")
    if st.button(f"Add {len(selected)} selected triple(s) to the removal basket", disabled=not selected):
        section.add_to_basket(model.name, selected)

    st.subheader("Influence against degree (Du Fig 1)")
    ranked = triples_in_words(cache.influence_table(model, occupation, charts.SCATTER_TRIPLES))
    widgets.show_chart(charts.influence_degree_scatter(ranked), ranked,
                       caption=texts.INFLUENCE_DEGREE.format(n=len(ranked), top=charts.SCATTER_TRIPLES),
                       file_name=widgets.readable_name(model.name, widgets.occupation_name(model, occupation),
                                                       "influence"),
                       key="influence_degree", occupation=widgets.occupation_name(model, occupation))

    share = cache.occupation_relation_share(model, occupation)
    st.metric("Occupation relations among the top 1% of triples", f"{share['share']:.0%}")
    st.caption(texts.OCCUPATION_SHARE.format(n_occupation=share["n_occupation"], n_top=share["n_top"],
                                             relations=", ".join(share["relations"])))

    st.subheader("Removal basket")
    section.removal_basket(model, occupation, row)
