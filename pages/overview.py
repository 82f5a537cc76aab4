"""Overview: the graph at a glance and every occupation's measures."""

import streamlit as st

from kgbias_app import cache, charts, sidebar, texts, widgets
from kgbias_core.tables import gender_ratio_table

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
    st.caption(texts.OVERVIEW_MODEL.format(model=model.name, dataset=model.dataset, **summary))

    st.subheader("Occupations ranked by group bias B_gr")
    widgets.show_chart(
        charts.group_bias_bars(measures),
        measures[["occupation", "name", "n_male", "n_female", "group_bias", "group_bias_low", "group_bias_high"]],
        caption=texts.GROUP_BIAS_BARS.format(undefined=int(measures["group_bias"].isna().sum())),
        file_name=widgets.csv_name(model.name, "group-bias"), key="group_bias_bars",
    )

    st.subheader("Does the gender ratio explain the bias?")
    ratios = gender_ratio_table(measures)
    widgets.show_chart(charts.ratio_scatter(ratios), ratios, caption=texts.RATIO_SCATTER,
                       file_name=widgets.csv_name(model.name, "ratio"), key="ratio_scatter")

    st.subheader("Every measure per occupation")
    st.dataframe(measures, hide_index=True)
    st.caption(texts.MEASURES_TABLE)
    widgets.download(measures, widgets.csv_name(model.name, "measures"), key="measures:csv",
                     label="Download the table (CSV)")
