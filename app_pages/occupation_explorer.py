"""Occupation explorer: one occupation's figures, its persons' B_in and B'_in, a comparison, and its
measures within the subpopulations of an attribute.

The sections below the headline are tabs, and only the open one is computed and drawn: an occupation
switch then sends and draws one chart instead of four (issue 15, the browser-visible switch)."""

import streamlit as st

from kgbias_app import cache, charts, links, sidebar, texts, widgets
from kgbias_app.sections import occupation_explorer as section

model = sidebar.page_header("Occupation explorer")

with widgets.errors_shown():
    measures = cache.measures(model)
    occupation, row, _ = widgets.occupation_section(measures)
    name = row["name"]  # readable, for exported charts' titles and file names
    section.headline(row)
    widgets.report_download(model, occupation)
    every_point = links.toggle(texts.EVERY_POINT, key="every_point", what="setting")

    distribution, scatter, persons_tab, compare, within = links.tabs(texts.EXPLORER_TABS, key="view")
    if distribution.open:
        with distribution:
            widgets.show_chart(cache.persons_figure(model, (occupation,), "distribution", every_point),
                               cache.persons(model, occupation), caption=texts.PERSONS_DISTRIBUTION,
                               key="individual_distribution", occupation=name,
                               file_name=widgets.readable_name(model.name, name, "persons"))
    if scatter.open:
        with scatter:
            persons = cache.persons(model, occupation)
            caption = texts.persons_scatter(len(persons), every_point=every_point, sample=charts.SCATTER_SAMPLE)
            clicked = widgets.show_chart(cache.persons_figure(model, (occupation,), "scatter", every_point), persons,
                                         caption=caption, key="individual_scatter", occupation=name,
                                         file_name=widgets.readable_name(model.name, name, "bin-vs-fisher"),
                                         on_select="rerun", selection_mode="points")
            section.open_a_person(persons, key="scatter_person", event=clicked)
    if persons_tab.open:
        with persons_tab:
            ranked = section.by_magnitude(cache.persons(model, occupation), "individual_bias")
            persons = widgets.with_person_links(ranked)
            widgets.table(persons, ["name", "gender", "degree", "individual_bias", "fisher_individual",
                                    "individual_bias_centred", widgets.PERSON_LINK], ids=["person"])
            st.caption(texts.PERSONS_TABLE)
            widgets.download(persons, widgets.csv_name(model.name, occupation, "persons-table"), key="persons:csv",
                             label="Download the table (CSV)")
    if compare.open:
        with compare:
            section.compare_occupations(model, measures, current=occupation, every_point=every_point)
    if within.open:
        with within:
            attribute = section.subpopulation_attribute(cache.analysis(model).model.schema)
            if attribute is not None:
                section.subpopulations(cache.intersections(model, occupation, attribute),
                                       file_name=widgets.csv_name(model.name, occupation, attribute))
