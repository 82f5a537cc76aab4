"""Overview: the graph at a glance and every occupation's measures."""

import streamlit as st

from kgbias_app import cache, sidebar, ui

st.title("Overview")
model = sidebar.render()
if model is None:
    st.stop()

with ui.errors_shown():
    summary = cache.summary(model.path, model.version)
    measures = cache.measures(model.path, model.version)
    columns = st.columns(5)
    columns[0].metric("Persons with a gender", f"{summary['n_persons']:,}")
    columns[1].metric("Men / women", f"{summary['n_male']:,} / {summary['n_female']:,}")
    columns[2].metric("Other gender values", f"{summary['n_other_gender']:,}")
    columns[3].metric("Occupations", f"{summary['n_occupations']:,}")
    columns[4].metric("Training triples", f"{summary['n_triples']:,}")
    st.caption(
        f"Model **{model.name}** on {model.dataset}: {summary['n_entities']:,} entities, "
        f"{summary['n_relations']} relations, {summary['n_persons_with_occupation']:,} persons with an "
        "occupation. Positive bias means male-leaning everywhere."
    )

    st.subheader("Occupations ranked by group bias B_gr")
    undefined = int(measures["group_bias"].isna().sum())
    ui.show_chart(
        ui.group_bias_bars(measures),
        measures[["occupation", "name", "n_male", "n_female", "group_bias", "group_bias_low", "group_bias_high"]],
        caption="Each bar is an occupation's B_gr: how much larger the TransE error of its women is than "
        "that of its men (blue, right: male-leaning; red, left: female-leaning). Whiskers: bootstrap 95% "
        f"interval over persons. {undefined} occupation(s) without men or without women have no B_gr "
        "and are left out.",
        file_name=f"{model.name}-group-bias.csv",
        key="group_bias_bars",
    )

    st.subheader("Does the gender ratio explain the bias?")
    figure, data = ui.ratio_scatter(measures)
    ui.show_chart(
        figure, data,
        caption="One point per occupation (size: number of persons). Du et al. observe that B_gr grows "
        "with the share of men in the graph but is not determined by it: points far from the trend are "
        "occupations whose bias the ratio does not explain.",
        file_name=f"{model.name}-ratio.csv",
        key="ratio_scatter",
    )

    st.subheader("Every measure per occupation")
    st.dataframe(measures, hide_index=True)
    st.caption(
        "B_gr: group bias; projection_bias: B_wo; individual_bias: B_in (Du), fisher_individual: B'_in, "
        "each averaged vanilla (all persons) or weighted (mean of women + mean of men); fisher_bp: "
        "Fisher's b_p for male vs female. All: > 0 = male-leaning. Click a header to sort."
    )
    ui.download(measures, f"{model.name}-measures.csv", key="measures:csv", label="Download the table (CSV)")
