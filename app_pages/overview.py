"""Overview: the graph at a glance and every occupation's measures."""

import streamlit as st

from kgbias_app import cache, charts, sidebar, texts, widgets
from kgbias_app.escape import md_format
from kgbias_app.sections import overview as section
from kgbias_core.tables import gender_ratio_table, ranked_occupations

#: The ranked table's columns, in reading order (the intervals of B_in and b_p are on the explorer).
RANKED_COLUMNS = ["name", "n_male", "n_female", "group_bias", "group_bias_low", "group_bias_high", "projection_bias",
                  "individual_bias_vanilla", "individual_bias_weighted", "fisher_individual_vanilla",
                  "fisher_individual_weighted", "fisher_bp", "n_other_gender", "n_unknown_gender"]

model = sidebar.page_header("Overview")

with widgets.errors_shown():
    summary = cache.summary(model)
    measures = cache.measures(model)
    columns = st.columns(5)
    columns[0].metric("Persons with a gender", f"{summary['n_persons']:,}")
    columns[1].metric("Men / women", f"{summary['n_male']:,} / {summary['n_female']:,}")
    columns[2].metric("Other gender values", f"{summary['n_other_gender']:,}")
    columns[3].metric("Occupations", f"{summary['n_occupations']:,}")
    columns[4].metric("Training triples", f"{summary['n_triples']:,}")
    st.caption(md_format(texts.OVERVIEW_MODEL, model=model.name, dataset=model.dataset, **summary))
    section.link_prediction_line(model)
    seed_columns = section.family_note(model, measures)

    st.subheader("Occupations ranked by group bias B_gr")
    minimum = widgets.min_group_size()
    ranked, small = ranked_occupations(measures, minimum=minimum)
    widgets.show_chart(
        charts.group_bias_bars(ranked, distance=cache.analysis(model).model.config.distance),
        ranked[["occupation", "name", "n_male", "n_female", "group_bias", "group_bias_low", "group_bias_high",
                *seed_columns]],
        caption=texts.GROUP_BIAS_BARS.format(n=len(ranked), small=len(small)),
        file_name=widgets.csv_name(model.name, "group-bias"), key="group_bias_bars",
    )

    st.subheader("A report of several occupations")
    section.several_report_download(model, ranked, measures)

    st.subheader("Every measure per ranked occupation")
    widgets.table(ranked, [*RANKED_COLUMNS[:6], *seed_columns, *RANKED_COLUMNS[6:]], ids=["occupation"])
    widgets.too_few(small, ["name", "n_male", "n_female", "note"], ids=["occupation"],
                    rule=texts.TOO_FEW_OCCUPATIONS.format(minimum=minimum))
    st.caption(texts.MEASURES_TABLE)
    widgets.download(measures, widgets.csv_name(model.name, "measures"), key="measures:csv",
                     label="Download every occupation's measures (CSV)")

    st.subheader("Does the gender ratio explain the bias?")
    ratios = gender_ratio_table(measures)
    widgets.show_chart(charts.ratio_scatter(ratios), ratios, caption=texts.RATIO_SCATTER,
                       file_name=widgets.csv_name(model.name, "ratio"), key="ratio_scatter")
