"""Occupation explorer: one occupation's figures, its persons' B_in and B'_in, a comparison, and its
measures within the subpopulations of an attribute."""

import streamlit as st

from kgbias_app import cache, charts, links, sidebar, texts, widgets

model = sidebar.page_header("Occupation explorer")

with widgets.errors_shown():
    measures = cache.measures(model)
    occupation, row, _ = widgets.occupation_section(measures)
    widgets.headline(row)
    widgets.report_download(model, occupation)

    persons = cache.persons(model, occupation)
    st.subheader("B_in per person, by gender")
    every_point = links.toggle(texts.EVERY_POINT, key="every_point", what="setting")
    widgets.show_chart(cache.persons_figure(model, (occupation,), "distribution", every_point), persons,
                       caption=texts.PERSONS_DISTRIBUTION, key="individual_distribution",
                       file_name=widgets.csv_name(model.name, occupation, "persons"))

    st.subheader("B_in against B'_in (Du Fig 3)")
    caption = texts.persons_scatter(len(persons), every_point=every_point, sample=charts.SCATTER_SAMPLE)
    widgets.show_chart(cache.persons_figure(model, (occupation,), "scatter", every_point), persons, caption=caption,
                       file_name=widgets.csv_name(model.name, occupation, "bin-vs-fisher"), key="individual_scatter")

    st.subheader("Persons")
    widgets.table(persons, ["name", "gender", "degree", "individual_bias", "fisher_individual",
                            "individual_bias_centred"], ids=["person"])
    st.caption(texts.PERSONS_TABLE)
    widgets.download(persons, widgets.csv_name(model.name, occupation, "persons-table"), key="persons:csv",
                     label="Download the table (CSV)")

    st.subheader("Compare occupations (Du Fig 2)")
    widgets.compare_occupations(model, measures, current=occupation, every_point=every_point)

    st.subheader(texts.INTERSECTIONS)
    attribute = widgets.subpopulation_attribute(cache.analysis(model).model.schema)
    if attribute is not None:
        widgets.subpopulations(cache.intersections(model, occupation, attribute),
                               file_name=widgets.csv_name(model.name, occupation, attribute))
