"""Occupation explorer: one occupation's figures, its persons' B_in and B'_in, and a comparison."""

import streamlit as st

from kgbias_app import cache, sidebar, ui

st.title("Occupation explorer")
model = sidebar.render()
if model is None:
    st.stop()

with ui.errors_shown():
    measures = cache.measures(model.path, model.version)
    occupation, row, _ = ui.occupation_section(measures)
    ui.headline(row)

    persons = cache.individuals(model.path, model.version, occupation)
    st.subheader("B_in per person, by gender")
    ui.show_chart(
        ui.individual_distribution(persons), persons,
        caption="Each point is a person of this occupation (hover: name and degree); violin and box show "
        "the distribution per gender. Points above 0 are persons whose link to the occupation leans male.",
        file_name=f"{model.name}-{occupation}-persons.csv".replace("/", "_"),
        key="individual_distribution",
    )

    st.subheader("B_in against B'_in (Du Fig 3)")
    ui.show_chart(
        ui.individual_scatter(persons), persons,
        caption="Du's influence-based B_in against Fisher's one-step B'_in, one point per person. They agree "
        "in sign by construction; B_in also divides by the person's Hessian weight, so persons of low "
        "degree move further from 0.",
        file_name=f"{model.name}-{occupation}-bin-vs-fisher.csv".replace("/", "_"),
        key="individual_scatter",
    )

    st.subheader("Persons")
    table = persons[["name", "gender", "degree", "individual_bias", "fisher_individual", "person"]]
    st.dataframe(table, hide_index=True)
    st.caption("individual_bias = B_in, fisher_individual = B'_in (> 0 = male-leaning). Click a header to sort.")
    ui.download(table, f"{model.name}-{occupation}-persons-table.csv".replace("/", "_"), key="persons:csv",
                label="Download the table (CSV)")

    st.subheader("Compare occupations (Du Fig 2)")
    chosen = ui.occupations_to_compare(measures, current=occupation)
    if len(chosen) < 2:
        st.info("Pick at least two occupations to compare.")
    else:
        several = cache.individuals_of(model.path, model.version, tuple(chosen))
        ui.show_chart(
            ui.compare_distributions(several), several,
            caption="B_in of each occupation's women and men side by side (box: quartiles; points: persons). "
            "Occupations whose boxes sit above 0 lean male for most of their persons.",
            file_name=f"{model.name}-compare.csv",
            key="compare_distributions",
        )
