"""Model comparison: which relations carry bias (Keidar et al.) and which model predicts more fairly
(Schwertmann et al.), for TransE, DistMult, ComplEx and RotatE trained on the same graph and split."""

import streamlit as st

from kgbias_app import compare_ui as cui
from kgbias_app import sidebar, ui

st.title("Model comparison")
model = sidebar.render()
if model is None:
    st.stop()

with ui.errors_shown():
    pending: list[str] = []
    progress_slot = st.container()
    models = cui.graph_models(model.dataset)
    st.header("Models on this graph")
    cui.training_panel(model.dataset, models, pending)
    chosen = cui.model_picker(models, current=model.name)
    if not chosen:
        st.info("Pick at least one model to compare.")
        st.stop()
    n_triples = cui.n_triples(chosen[0])

    st.subheader("Link prediction")
    predictions = cui.link_predictions(chosen, pending)
    if predictions:
        table = cui.link_prediction_table(predictions)
        st.dataframe(cui.styled(table), hide_index=True)
        ui.show_chart(
            cui.link_prediction_chart(table), table,
            caption="Filtered MRR and Hits@1/3/10 of tail prediction on the test split: over all test triples "
            "and over the occupation queries (person, occupation, ?) only. Higher = the model predicts "
            "facts better; compare the fairness below only between models that predict comparably well. "
            "Computed once per model and cached beside it.",
            file_name=cui.safe_name(model.dataset, "link-prediction"), key="link_prediction",
        )

    st.header("Which relations carry bias? (Keidar et al.)")
    params = cui.audit_controls(n_triples)
    audits = cui.relation_audits(chosen, params, pending)
    if audits:
        st.caption(cui.AUDIT_CAPTION.format(classifier=cui.CLASSIFIERS[params["kind"]], **params))
        wide = cui.audit_wide(audits)
        st.dataframe(cui.styled(wide), hide_index=True)
        ui.download(cui.audit_long(audits), cui.safe_name(model.dataset, "relation-audit"), key="audit:csv",
                    label="Download the table (CSV)")
        st.markdown("**Occupation classifier** (accuracy on a held-out quarter of the persons)")
        st.dataframe(cui.styled(cui.classifier_table(audits)), hide_index=True)
        ui.show_chart(
            cui.audit_heatmap(wide), wide,
            caption="Each cell: one relation's bias under one measure and model (the number). The colour is "
            "the value relative to the largest of the same measure, because DPD, PPD and TLB have "
            "different scales: compare colours along a row within one measure, i.e. across models.",
            file_name=cui.safe_name(model.dataset, "relation-audit-wide"), key="audit_heatmap",
        )

        st.subheader("Drill down into one relation")
        relations = list(wide["relation"])
        relation = st.selectbox("Relation", relations, key="audit_relation")
        values = cui.value_table(audits, relation)
        st.dataframe(cui.styled(values), hide_index=True)
        st.caption(f"One row per tail value of {relation}, one-vs-rest: n_persons have the value, n_rest have "
                   "another value of the relation only; 'undefined' = skipped (too few persons) or no class "
                   "defined for both sides. The relation's number above is the mean of its defined rows.")
        figure, data = cui.value_chart(audits, relation)
        ui.show_chart(figure, data, caption="The rows of the table as bars, one panel per measure (each with its "
                      "own scale): the values that drive the relation's bias stand out.",
                      file_name=cui.safe_name(model.dataset, relation, "values"), key="value_chart")
        labels = dict(zip(values["value"], values["value_name"], strict=True))
        value = st.selectbox("Most biased professions for the value (TLB, Keidar Table 3)", list(labels),
                             format_func=labels.__getitem__, key="audit_value")
        columns = st.columns(len(chosen))
        for column, m in zip(columns, chosen, strict=True):
            column.markdown(f"**{m.name}**")
            column.dataframe(cui.styled(cui.top_professions(m, relation, value), 4), hide_index=True)
        st.caption(f"The professions whose plausibility moves most when persons are nudged towards "
                   f"'{labels[value]}' and away from the other values (Fisher's b_p, > 0 = associated with the "
                   "value; n_a / n_b: persons of the profession with / without it). Over every profession and "
                   "every person with the relation, unlike TLB, which averages over the k classified ones.")

    st.header("Are the predictions fair? (Schwertmann et al.)")
    default = cui.default_min_count(n_triples)
    min_count = st.slider("Minimum test facts for an occupation to be a class of its own", 1, 500, default,
                          key="min_count")
    st.caption(f"Default {default}: the paper's 100 on graphs with at least {cui.LARGE_GRAPH:,} training "
               f"triples (FB15k-237), {cui.MIN_COUNT_SMALL} on smaller graphs, whose test splits hold few facts "
               "per occupation. Occupations below the minimum are pooled as OTHER.")
    reports = cui.fairness_reports(chosen, min_count)
    if cui.no_class_reaches(reports):
        st.warning(f"No occupation has {min_count} or more test facts: every fact falls in OTHER and there is "
                   "nothing to compare. Lower the minimum count.")
    else:
        gaps = cui.model_gaps(reports)
        st.dataframe(gaps[["model", *[f"{g} (95% CI)" for g in cui.GAP_NAMES], "n_classes", "n_facts",
                           "n_not_occupation"]], hide_index=True)
        ui.show_chart(
            cui.gap_chart(gaps), gaps,
            caption="Level (i), per model: DPG (selection rate), PPG (precision) and EOG (recall), each the gap "
            "|men − women| averaged over the occupation classes where it is defined; whiskers: bootstrap 95% "
            f"interval over the test facts ({cui.N_BOOTSTRAP} resamples). Lower = fairer. n_not_occupation: "
            "top-1 predictions that are not an occupation at all (counted as wrong).",
            file_name=cui.safe_name(model.dataset, "fairness-gaps"), key="gap_chart",
        )
        st.subheader("Per gender (level ii)")
        groups = cui.group_metrics(reports)
        st.dataframe(cui.styled(groups.drop(columns=list(cui.METRIC_COLUMNS))), hide_index=True)
        st.caption("Macro means over the classes of each metric per gender, with 95% intervals; "
                   "selection_deviation: mean of SelR − data share (abs_: of its magnitude). 'undefined': no "
                   "class defined it (e.g. precision when the group was never predicted any class).")
        ui.download(groups, cui.safe_name(model.dataset, "fairness-groups"), key="groups:csv",
                    label="Download the table (CSV)")
        st.subheader("Per occupation class and gender (level iii, Schwertmann Table 5)")
        classes = cui.class_group_metrics(chosen, reports)
        st.dataframe(cui.styled(classes), hide_index=True)
        ui.show_chart(
            cui.deviation_chart(classes), classes,
            caption="Selection-rate deviation per class: how much more (> 0) or less (< 0) often the model "
            "predicts the occupation for men / women than the test data holds it. 'undefined' in the table: "
            "precision of a class never predicted for the group, recall of a class absent from its truth.",
            file_name=cui.safe_name(model.dataset, "fairness-classes"), key="deviation_chart",
        )

    if pending:
        with progress_slot:
            st.info("Computing in the background: the page fills in as each job finishes.")
            cui.job_progress(pending)
