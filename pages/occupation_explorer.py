"""Occupation explorer: one occupation's figures, its persons' B_in and B'_in, and a comparison."""

import streamlit as st

from kgbias_app import cache, sidebar, texts, widgets

model = sidebar.page_header("Occupation explorer")

with widgets.errors_shown():
    measures = cache.measures(model)
    occupation, row, _ = widgets.occupation_section(measures)
    widgets.headline(row)

    persons = cache.persons(model, occupation)
    st.subheader("B_in per person, by gender")
    widgets.show_chart(cache.persons_figure(model, (occupation,), "distribution"), persons,
                       caption=texts.PERSONS_DISTRIBUTION, key="individual_distribution",
                       file_name=widgets.csv_name(model.name, occupation, "persons"))

    st.subheader("B_in against B'_in (Du Fig 3)")
    widgets.show_chart(cache.persons_figure(model, (occupation,), "scatter"), persons, caption=texts.PERSONS_SCATTER,
                       file_name=widgets.csv_name(model.name, occupation, "bin-vs-fisher"), key="individual_scatter")

    st.subheader("Persons")
    widgets.table(persons, ["name", "gender", "degree", "individual_bias", "fisher_individual"], ids=["person"])
    st.caption(texts.PERSONS_TABLE)
    widgets.download(persons, widgets.csv_name(model.name, occupation, "persons-table"), key="persons:csv",
                     label="Download the table (CSV)")

    st.subheader("Compare occupations (Du Fig 2)")
    chosen = widgets.occupations_to_compare(measures, current=occupation)
    if len(chosen) < 2:
        st.info(texts.COMPARE_TWO)
    else:
        several = cache.persons_of(model, tuple(chosen))
        widgets.show_chart(cache.persons_figure(model, tuple(chosen), "compare"), several,
                           caption=texts.COMPARE_DISTRIBUTIONS, file_name=widgets.csv_name(model.name, "compare"),
                           key="compare_distributions")
