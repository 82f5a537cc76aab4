"""Model comparison: which relations carry bias (Keidar et al.) and which model predicts more fairly
(Schwertmann et al.), for TransE, DistMult, ComplEx and RotatE trained on the same graph and split."""

import streamlit as st

from kgbias_app import cache, charts, jobs_ui, sidebar, texts, widgets
from kgbias_app.sections import model_comparison as section
from kgbias_core import tasks
from kgbias_core.evaluation.link_prediction import link_prediction_table, load_link_prediction
from kgbias_core.jobs import Priority
from kgbias_core.measures import prediction_fairness as fairness
from kgbias_core.measures import relation_audit as audit

model = sidebar.page_header("Model comparison")

with widgets.errors_shown():
    pending: list[tasks.Task] = []
    progress_slot = st.container()
    models = cache.base_models(model.dataset)
    st.header("Models on this graph")
    section.training_panel(model.dataset, models, pending)
    chosen = section.models_to_compare(models, current=model.name)
    if not chosen:
        st.info(texts.PICK_A_MODEL)
        st.stop()
    n_triples = cache.summary(chosen[0])["n_triples"]

    st.subheader("Link prediction")
    predictions = jobs_ui.stored_per_model(chosen, title="Link prediction of {name}", pending=pending,
                                           load=lambda m: load_link_prediction(m.path),
                                           task=lambda m: tasks.link_prediction_task([m.path]))
    if predictions:
        table = link_prediction_table(predictions)
        widgets.table(table, list(table.columns))
        widgets.show_chart(charts.link_prediction_chart(table), table, caption=texts.LINK_PREDICTION,
                           file_name=widgets.csv_name(model.dataset, "link-prediction"), key="link_prediction")

    st.subheader("Accuracy against disparity")
    section.accuracy_disparity(model, pending)

    st.header("Which relations carry bias? (Keidar et al.)")
    params = section.audit_controls(n_triples)
    audits = jobs_ui.stored_per_model(chosen, title="Relation audit of {name}", pending=pending,
                                      load=lambda m: audit.load_value_audit(m.path, **params),
                                      task=lambda m: tasks.relation_audit_task(m.path, params),
                                      priority=Priority.BACKGROUND)
    if audits:
        st.caption(texts.AUDIT_CAPTION.format(classifier=texts.CLASSIFIERS[params["kind"]], **params))
        wide = audit.audit_wide(audits)
        section.audit_table(wide)
        widgets.download(audit.audit_long(audits), widgets.csv_name(model.dataset, "relation-audit"),
                         key="audit:csv", label="Download the table (CSV)")
        st.markdown(texts.CLASSIFIER_HEADING)
        classifiers = audit.classifier_table(audits)
        widgets.table(classifiers, list(classifiers.columns))
        widgets.show_chart(charts.audit_heatmap(wide), wide, caption=texts.AUDIT_HEATMAP,
                           file_name=widgets.csv_name(model.dataset, "relation-audit-wide"), key="audit_heatmap")

        st.subheader("Drill down into one relation")
        section.relation_drill_down(audits, chosen, relations=list(wide["relation"]), dataset=model.dataset)

    st.header("Are the predictions fair? (Schwertmann et al.)")
    min_count = section.fairness_min_count(cache.occupation_test_facts(chosen[0]))
    reports = {m.name: cache.fairness_report(m, min_count) for m in chosen}
    if all(report.classes == (fairness.OTHER,) for report in reports.values()):
        st.warning(texts.NO_CLASS_REACHES.format(min_count=min_count))
    else:
        section.degenerate_warnings(reports, chosen)
        gaps = fairness.gap_table(reports)
        widgets.table(gaps, ["model", *[f"{g} (95% CI)" for g in fairness.GAP_NAMES], "n_classes", "n_facts",
                             "n_not_occupation"])
        widgets.show_chart(charts.gap_chart(gaps), gaps, file_name=widgets.csv_name(model.dataset, "fairness-gaps"),
                           caption=texts.GAP_CHART.format(n_bootstrap=reports[chosen[0].name].n_bootstrap),
                           key="gap_chart")
        st.subheader("Per gender (level ii)")
        groups = fairness.group_table(reports)
        widgets.table(groups, [c for c in groups.columns if c not in fairness.METRICS])
        st.caption(texts.GROUP_METRICS)
        widgets.download(groups, widgets.csv_name(model.dataset, "fairness-groups"), key="groups:csv",
                         label="Download the table (CSV)")
        st.subheader("Per occupation class and gender (level iii, Schwertmann Table 5)")
        classes = fairness.class_group_table(reports, {m.name: cache.analysis(m).model.entity_names for m in chosen})
        widgets.table(classes, list(classes.columns), ids=["class"])
        widgets.show_chart(charts.deviation_chart(classes), classes, caption=texts.DEVIATION_CHART,
                           file_name=widgets.csv_name(model.dataset, "fairness-classes"), key="deviation_chart")

    if pending:
        with progress_slot:
            st.info(texts.IN_THE_BACKGROUND)
            jobs_ui.progress_panel(pending)
