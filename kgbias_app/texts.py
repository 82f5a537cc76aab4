"""What the dashboard says in words: plain-language readings of the measures, captions, UI messages.

Errors of the core are constants in :mod:`kgbias_core.errors`; the messages here are the app's own
(hints, empty states, how to read a chart). Templates are filled with ``str.format``. Every bias
reads the same way everywhere: positive = male-leaning (METHODS.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kgbias_app.escape import md
from kgbias_core.jobs import JobState, JobStatus
from kgbias_core.readings import (  # noqa: F401  (the app reads these as texts.*)
    DIGITS,
    MEASURES_DISAGREE,
    NO_INTERVAL_LEAN,
    NO_NOISE_BAND,
    PROJECTION_NO_INTERVAL,
    SENTENCES,
    SIGN,
    UNDEFINED,
    UNDEFINED_SENTENCE,
    WHY_THEY_DIFFER,
    ZERO_SENTENCE,
    agreement,
    fmt,
    is_defined,
    link_baseline_sentence,
    membership_sentence,
    model_unaudited_sentence,
    noise_sentence,
    number,
    seed_band_of,
    sentence,
)
from kgbias_core.subpopulations import SubpopulationComparison

# --- tables ---------------------------------------------------------------------------------------
#: The display name of each column code of the core's tables; ids (labels, indices) read "id".
#: Downloads keep the codes: they are for programs, the screen is for people.
COLUMNS: dict[str, str] = {
    # occupations and their measures (tables.measures_table)
    "occupation": "id", "name": "name", "n_male": "men", "n_female": "women",
    "group_bias": "B_gr", "group_bias_low": "B_gr 95% low", "group_bias_high": "B_gr 95% high",
    "group_bias_seed_min": "B_gr seed min", "group_bias_seed_max": "B_gr seed max",
    "group_bias_seed_std": "B_gr seed std", "n_seeds": "seeds",
    "projection_bias": "B_wo", "individual_bias_vanilla": "B_in, all persons",
    "individual_bias_weighted": "B_in, women + men", "fisher_individual_vanilla": "B'_in, all persons",
    "fisher_individual_weighted": "B'_in, women + men", "fisher_bp": "Fisher b_p",
    "n_other_gender": "other gender value", "n_unknown_gender": "no gender value", "note": "note",
    # persons (tables.persons_table)
    "person": "id", "gender": "gender", "degree": "degree", "individual_bias": "B_in",
    "fisher_individual": "B'_in",
    "individual_bias_centred": "B_in − graph mean", "fisher_individual_centred": "B'_in − graph mean",
    # triples (tables.triples_frame, influence_table)
    "in words": "triple in words", "influence": "δ_z B_gr", "person_gender": "person's gender",
    "person_degree": "person's degree", "relation": "relation", "triple": "triple id", "person_name": "person",
    # Fisher's professions (tables.fisher_table)
    "profession": "id", "label": "id", "bias": "b_p",
    # link prediction, the relation audit and the prediction fairness (model comparison)
    "model": "model", "queries": "queries", "side": "side", "n": "queries (n)", "mrr": "MRR", "hits@1": "Hits@1",
    "hits@3": "Hits@3", "hits@10": "Hits@10", "mr": "mean rank",
    "baseline_mrr": "popularity MRR", "baseline_hits@1": "popularity Hits@1", "baseline_hits@10": "popularity Hits@10",
    "same_top1": "same top-1 share", "relation_words": "relation",
    "value": "id", "value_name": "value", "n_persons": "persons with the value", "n_rest": "persons without it",
    "classifier": "classifier", "k": "k", "accuracy": "accuracy", "balanced_accuracy": "balanced accuracy",
    "n_classified": "persons classified", "class": "id", "class_name": "occupation class", "group": "gender",
    "selection_rate": "selection rate", "precision": "precision", "recall": "recall", "n_true": "true facts",
    "n_predicted": "predicted", "data_share": "data share", "selection_deviation": "SelR − data share",
    "abs_selection_deviation": "|SelR − data share|", "n_facts": "test facts",
    "n_not_occupation": "predictions that are no occupation", "n_classes": "occupation classes",
    "selection_rate (95% CI)": "selection rate (95% CI)", "precision (95% CI)": "precision (95% CI)",
    "recall (95% CI)": "recall (95% CI)",
}


def measure_name(column: str) -> str:
    """A measure's display name (:data:`COLUMNS`), or its code where it has none."""
    return COLUMNS.get(column, column)


TOO_FEW = "Too few persons to rank ({rule}): {n}"
TOO_FEW_OCCUPATIONS = "fewer than {minimum} men or {minimum} women"
TOO_FEW_PROFESSIONS = "fewer than {minimum} {a}- plus {b}-persons"
MIN_GROUP_HELP = (
    "Occupations with fewer men or fewer women than this are listed apart, not ranked: a figure over one "
    "or two persons is noise, and would lead the ranking."
)

PREDICTED_CHANGE = "Predicted change of B_gr"
# --- jobs ---------------------------------------------------------------------------------------
JOB_STOPPED = "{name} {state}: {error}."


def job_stopped(status: JobStatus) -> str:
    """How a cancelled or failed job ended, and what it kept (its task says: a saved model stays, ...)."""
    text = JOB_STOPPED.format(name=md(status.name), state=status.state.value, error=md(str(status.error)))
    return f"{text} {md(status.kept)}" if status.kept else text


def duration(seconds: float) -> str:
    """'about 40 s', 'about 6 min', 'about 1.5 h'."""
    if seconds < 90:
        return f"about {max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} h"


#: The distances other than squared L2 (kgbias's default), as the pages name them.
DISTANCE_NAMES = {"l1": "L1", "l2": "L2 (unsquared)", "pseudo_huber": "pseudo-Huber"}


def distance_name(distance: str) -> str:
    """A TransE distance as the pages name it (:data:`DISTANCE_NAMES`; squared L2 otherwise)."""
    return DISTANCE_NAMES.get(distance, "squared L2")


def with_estimate(label: str, seconds: float | None) -> str:
    """A button's label with the work's estimate: 'Calibrate … (about 6 min)'."""
    return label if seconds is None else f"{label[:-1]}, {duration(seconds)})" if label.endswith(")") \
        else f"{label} ({duration(seconds)})"


QUEUE_EMPTY = "Nothing running or waiting."
CANCEL_HELP = "Stop this job (a running one stops at its next epoch or retrain); you will be told what was kept."


def queue_heading(queue: list[JobStatus]) -> str:
    return "Jobs" if not queue else f"Jobs ({len(queue)} running or waiting)"


def queue_row(status: JobStatus) -> str:
    """One job in the queue: name, running/position, background or not, estimate."""
    where = "running" if status.state is JobState.RUNNING else f"waiting, #{status.queue_position}"
    kind = ", background" if status.priority > 0 else ""
    if status.state is JobState.RUNNING and status.progress.seconds_left is not None:
        estimate = f", {duration(status.progress.seconds_left)} left"
    elif status.estimate is not None:
        estimate = f", {duration(status.estimate)}"
    else:
        estimate = ""
    return f"**{status.name}** ({where}{kind}{estimate})"


def queue_total(seconds: float, unknown: int) -> str:
    text = f"Total ahead: {duration(seconds)}"
    return text + (f", plus {unknown} job(s) without an estimate" if unknown else "") + " (CPU estimate)."
JOB_DONE = "{name}: done."
JOBS_OF_SESSION = "Jobs of this session"
RESULT_MISSING = "{title} finished but its result is not in the model store (was the model replaced?)."


def job_progress(status: JobStatus) -> str:
    """One line on a queued or running job: stage, message, steps, loss and the time left."""
    if status.state is JobState.QUEUED:
        return f"{status.name}: queued (position {status.queue_position})"
    progress = status.progress
    steps = f"step {progress.step}/{progress.total or '?'}"
    loss = "" if progress.loss is None else f", loss {progress.loss:.4f}"
    left = "estimating…" if progress.seconds_left is None else f"about {progress.seconds_left:.0f} s left"
    message = f", {progress.message}" if progress.message else ""
    return f"{status.name}: {progress.stage}{message} ({steps}{loss}; {left})"


# --- sidebar ------------------------------------------------------------------------------------
FIRST_TRAINING = "Training a first model in the background: the dashboard opens when it is ready."
NO_MODEL = "No cached model for {graph} yet: train one in the sidebar."
NO_MODEL_SIDEBAR = "No cached model for this graph yet."
TRAIN_HELP = "TransE with the default config, in the background; the estimate is for this machine's CPU"
#: What each chart shows, as the first part of its exported title (widgets.show_chart's ``key``).
CHART_TITLES = {
    "group_bias_bars": "Group bias B_gr per occupation (95% CI)",
    "ratio_scatter": "B_gr against the share of men",
    "individual_distribution": "Individual bias B_in of each person",
    "individual_scatter": "B_in against Fisher's individual score",
    "compare_distributions": "B_in of several occupations",
    "subpopulation_bars": "Measures within subpopulations",
    "influence_degree": "Influence of training triples against degree",
    "fisher_bars": "Fisher's b_p per profession",
    "bias_change": "Change of B_gr after the what-if",
    "removal_curve": "B_gr after removing k triples",
    "link_prediction": "Link prediction per model",
    "audit_heatmap": "Relation audit (Keidar et al.)",
    "gap_chart": "Prediction fairness gaps",
    "deviation_chart": "Prediction fairness per class",
    "value_chart": "Bias per tail value",
    "accuracy": "Predicted against retrained change of B_gr",
    "census": "Measure against the census",
}
DISAGREE_ONE_LINE = (
    "*In one line:* B_gr compares this occupation's women with its men, while B_in and b_p also carry a pull "
    "every occupation shares, so they can lean the other way."
)
READINESS_HEADING = "Ready for a demo: {ready} of {n}"
READINESS_PREPARE = (
    "The pages compute what is missing when opened; to have it all ahead of a talk, run "
    "`kgbias prepare --dataset {graph}` (add `--calibrate` for the calibration)."
)
TRAIN_BUTTON = "Train {name} ({estimate})"
# --- a seed family of the default model (issue 24) ---
FAMILY_HEADING = "Seed family of {name}"
FAMILY_SEEDS = "Seeds"
FAMILY_SEEDS_HELP = (
    "N seeds of the default model's config, each an ordinary model: the default model is the first, its "
    "siblings are NAME-s1, NAME-s2, .... Every measure and finding then shows its spread over the seeds."
)
FAMILY_ESTIMATE = (
    "{n} seeds = {n} trainings of {one} each ({total} on a quiet CPU); {left} of them not in the store yet: "
    "{remaining}."
)
FAMILY_BUTTON = "Train the family in the background ({estimate})"
FAMILY_HELP = (
    "Through the job queue, one seed after the other; a member already in the store as it would be trained is kept."
)
TRAIN_ESTIMATE = "{graph} has no model yet. Training takes {estimate} on a quiet CPU (a GPU is several times faster)."
FOLLOW_UP_RUNNING = (
    "{name} is ready; a retrain or two audit its what-if predictions (a removal, an addition) in the background "
    "(see Jobs). Predicted changes do not wait for them."
)
#: The job name of the one-retrain audit of a model's prediction (kgbias_core/tasks/prediction_audit.py).
AUDIT_JOB = "{name}: prediction audit"
ADD_AUDIT_JOB = "{name}: Add audit"
TEMPERATURE_JOB = "{name}: the hinge's temperature from its audit"

# --- overview -----------------------------------------------------------------------------------
OVERVIEW_MODEL = (
    "Model **{model}** on {dataset}: {n_entities:,} entities, {n_relations} relations, "
    "{n_persons_with_occupation:,} persons with an occupation. Positive bias means male-leaning everywhere."
)
GROUP_BIAS_BARS = (
    "Each bar is an occupation's B_gr: how much larger the TransE error of its women is than that of its men "
    "(blue, right: male-leaning; red, left: female-leaning). Whiskers: bootstrap 95% interval over persons: "
    "a bar whose whisker crosses 0 shows no clear lean. {n} occupation(s) ranked; {small} with too few men or "
    "women are listed apart below the table."
)
RATIO_SCATTER = (
    "One point per occupation (size: number of persons). Du et al. observe that B_gr grows with the share "
    "of men in the graph but is not determined by it: points far from the trend are occupations whose bias "
    "the ratio does not explain."
)
MEASURES_TABLE = (
    "The occupations of the chart, one row each. B_gr: group bias; B_wo: projection; B_in (Du) and B'_in "
    "(Fisher's one-step update), each averaged over all persons or as mean of women + mean of men; Fisher "
    "b_p: male vs female. All: > 0 = male-leaning. Click a header to sort. The download holds every "
    "occupation, small ones included."
)

# --- occupation explorer ------------------------------------------------------------------------
GROUP_NOTE = "{name}: {note} ({n_male} men, {n_female} women)."
EVERY_POINT = "Show every person as a point (slower for large occupations)"
PERSONS_DISTRIBUTION = (
    "Violin and box show the distribution of B_in per gender; points are the outliers (or every person, with "
    "the switch above; hover: name and degree). Points above 0 are persons whose link to the occupation "
    "leans male."
)
PERSONS_SCATTER = (
    "Du's influence-based B_in against Fisher's one-step B'_in, one point per person. They agree in sign by "
    "construction; B_in also divides by the person's Hessian weight, so persons of low degree move further "
    "from 0."
)
SCATTER_SAMPLED = " Drawn: a random sample of {shown} of the {n:,} persons (the switch above draws them all)."


def persons_scatter(n: int, *, every_point: bool, sample: int) -> str:
    """The scatter's caption, saying when it draws a sample of the ``n`` persons, not all."""
    return PERSONS_SCATTER + ("" if every_point or n <= sample else SCATTER_SAMPLED.format(shown=sample, n=n))
PERSONS_TABLE = (
    "B_in and B'_in per person (> 0 = male-leaning; Du et al.'s definitions); degree: the person's training "
    "triples. Every person of a graph shares one offset, the occupation relation's component along the gender "
    "direction, so often all lean the same way: \"B_in − graph mean\" says who leans more than the graph's "
    "typical person. Sorted by |B_in|, the persons who lean most (either way) first; click a header to sort "
    "otherwise, \"open\" for the person view."
)
REPORT_HELP = (
    "One HTML file that opens offline: the graph, the model's config and data hash, the measures with their "
    "intervals and readings, the charts (interactive), and for a what-if its predicted and retrained change."
)
IMAGE_HELP = "The chart as an image for slides (PNG) or print (SVG), drawn when clicked (a few seconds)."

# --- occupation explorer: within subpopulations (intersectional) ----------------------------------
INTERSECTIONS = "Within subpopulations (intersectional)"


def comparison_sentence(name: str, attribute: str, comparison: SubpopulationComparison,
                        escape: Callable[[str], str] = str) -> str:
    """The permutation test of B_gr between two subpopulations of occupation ``name``, in one plain sentence;
    ``escape`` is applied to the subpopulations' names and the note (Markdown escaping on a page)."""
    if comparison.note:
        return f"No test of the difference: {escape(comparison.note)}."
    verdict = ("a difference this large rarely arises by chance (p < 0.05)" if comparison.p_value < 0.05
               else "a difference this large could well arise by chance (p ≥ 0.05)")
    return (f"Among {name}'s persons, B_gr within {escape(comparison.name_a)} minus within "
            f"{escape(comparison.name_b)} is "
            f"{fmt(comparison.difference)}. Shuffling the {attribute} values among persons of the same gender "
            f"{comparison.n_permutations:,} times gives p = {comparison.p_value:.3g}: {verdict}.")


# --- influential triples ------------------------------------------------------------------------
NEEDS_BOTH_GENDERS = "Influence on B_gr needs at least one man and one woman: pick another occupation."
INFLUENCE_READING = (
    "δ_z B_gr is Du et al.'s influence (Eq. 3) of one training triple on this occupation's B_gr: > 0 means "
    "that retraining without the triple raises B_gr (more male-leaning). Select rows to put them in the "
    "removal basket."
)
INFLUENCE_DEGREE = (
    "The {n:,} triples with the largest |δ_z B_gr| (all with non-zero influence, at most {top:,}), against the "
    "degree of the person in them (the entity with a gender or occupation fact, never the occupation node; "
    "triples without a person are left out). Du et al. find the most influential triples at persons of low degree: "
    "their embeddings rest on few triples."
)
OCCUPATION_SHARE = (
    "{n_occupation} of the {n_top} training triples with the largest |δ_z B_gr| (the top 1% of the triples "
    "that move this occupation's B_gr at all, at least one) use an occupation-like relation. Counted: "
    "{relations}: the schema's occupation relation and every relation with the word 'profession' or "
    "'occupation' in its label. Du et "
    "al. report ~74% occupation and inverse-occupation triples on FB5M."
)

# --- attributes (Fisher et al.) -----------------------------------------------------------------
REST_NAME = "the other values"
FISHER_READING = (
    "b_p (Fisher §3.2): the mean change of each profession's plausibility when every person's embedding "
    "takes a small step towards '{a}' and away from '{b}'. > 0: associated with {a}. Professions with fewer "
    "than {min_count} {a}- plus {b}-persons are not ranked ({n} kept; the others are listed apart at the bottom)."
)
FISHER_TOO_FEW = "No profession has that many persons with these values: lower the minimum count."
FISHER_BARS = (
    "The professions of the two tables, one bar per row: bars to the right lean towards {a}, to the left "
    "towards {b}. The download holds every profession kept by the minimum count."
)

# --- model comparison ---------------------------------------------------------------------------
CLASSIFIERS = {"random_forest": "Random forest", "mlp": "MLP (multi-layer perceptron)"}
PICK_A_MODEL = "Pick at least one model to compare."
IN_THE_BACKGROUND = "Computing in the background: the page fills in as each job finishes."
LINK_PREDICTION = (
    "Filtered MRR and Hits@1/3/10 on the test split (realistic ranks: ties count half), predicting heads "
    "(?, r, t), tails (h, r, ?) and both pooled (the figure papers report), over all test triples and over the "
    "occupation queries (person, occupation, ?) only. Higher = the model predicts facts better; compare the "
    "fairness below only between models that predict comparably well. Computed once per model and cached "
    "beside it. The table's popularity columns are the floor: each relation's answers ranked by how often they "
    "answer it in training, the query's entity ignored; the same top-1 share is how many queries get the top-1 "
    "answer their relation's queries get most often (100%: the model does not read the query's entity)."
)
AUDIT_CAPTION = (
    "Keidar et al. (METHODS §7): a {classifier} predicts each person's occupation (the {k} most common + "
    "OTHER) from the entity embedding; every tail value of a relation is one-vs-rest among the persons "
    "having the relation. DPD = Σ_a |P(ŷ=a | s=1) − P(ŷ=a | s=0)|; PPD = Σ_a |P(ŷ=a | y=a, s=1) − "
    "P(ŷ=a | y=a, s=0)| as the paper writes it: it conditions on the true class, like a recall (an "
    "equal-opportunity gap), not on the prediction like a precision; TLB = mean |Fisher b_p| over the "
    "{k} professions. Each relation's number is the plain mean over its tail values (Keidar Eq. 6): no "
    "division by the number of values (+1) as in the authors' code. Values held by fewer than "
    "{min_persons} persons are skipped. All unsigned: larger = more bias; 'undefined' = no usable value."
)
CLASSIFIER_HEADING = "**Occupation classifier** (accuracy on a held-out quarter of the persons)"
AUDIT_HEATMAP = (
    "Each cell: one relation's bias under one measure and model (the number). The colour is the value "
    "relative to the largest of the same measure, because DPD, PPD and TLB have different scales: compare "
    "colours along a row within one measure, i.e. across models."
)
NO_CLASS_REACHES = (
    "No occupation has {min_count} or more test facts: every fact falls in OTHER and there is nothing to "
    "compare. Lower the minimum count."
)
GAP_CHART = (
    "Level (i), per model: DPG (selection rate), PPG (precision) and EOG (recall), each the gap |men − women| "
    "averaged over the occupation classes where it is defined; whiskers: bootstrap 95% interval over the "
    "test facts ({n_bootstrap} resamples). Lower = fairer. n_not_occupation: top-1 predictions that are not "
    "an occupation at all (counted as wrong)."
)
GROUP_METRICS = (
    "Macro means over the classes of each metric per gender, with 95% intervals; selection_deviation: mean "
    "of SelR − data share (abs_: of its magnitude). 'undefined': no class defined it (e.g. precision when "
    "the group was never predicted any class)."
)
DEVIATION_CHART = (
    "Selection-rate deviation per class: how much more (> 0) or less (< 0) often the model predicts the "
    "occupation for men / women than the test data holds it. 'undefined' in the table: precision of a class "
    "never predicted for the group, recall of a class absent from its truth."
)

# --- debiasing lab ------------------------------------------------------------------------------
RUN_IN_STORE = "This what-if is already in the store as `{name}`: compare it below."
RUN_RETRAINING = "`{name}` is being retrained (see the jobs below)."
NOISE_BAND_PENDING = (
    "Noise band pending: 3 retrains of the unedited graph under other seeds run in the background (once per "
    "model). Until they are done, no change below can be told apart from retraining drift."
)
NOISE_BAND_JOB = "{name}: noise band"
#: Where the model cannot be retrained here (an import, a debiased model): said once, under the edit, instead of the
#: retrain button; the retrains below (noise band, audits, calibration, the curve) are then neither started nor offered.
NO_RETRAIN_HERE = "No retrain here: {why}."
NO_RETRAINS_BELOW = ("No noise band, audit or calibration for this model: each retrains it, and it cannot be "
                     "retrained here (above).")
NO_CURVE_HERE = "No retrained curve for this model: it cannot be retrained here (above)."
NO_RUNS_HERE = "No what-if runs: this model cannot be retrained here (above)."
CALIBRATE_BUTTON = "Calibrate the old closed form (13 masked retrains over 6 occupations)"
NOISE_BAND = "B_gr of {name} across retrains of the unedited graph under seeds {seeds}: spread {spread} (max − min)."
NO_RUNS = "No what-if of this model yet: choose an edit above and retrain."
STALE_RUNS = (
    "{n} older run(s) of `{model}` are hidden because the model was retrained since (other data or settings): "
    "{names}. Comparing them with today's model would mislead; retrain the edit to compare."
)
RUN_EDIT = "Edit: {strategy} on {occupation}, retrained {mode}."
RETRAIN_BUTTON = "Retrain from the base's seed (faithful)"
RETRAIN_HELP = (
    "A masked retrain: same seed, initialisation, batch order and negatives as the base, without the removed "
    "triples (or with the added ones), so it differs from the base only by the edit (~45 s on FB15k-237 on a "
    "quiet 2-core CPU). The instant estimate is the predicted change above."
)
WARM_RUN = (
    "This run was warm-started (a few epochs from the base weights), a mode kgbias no longer offers: on "
    "FB15k-237 it moved the edited occupation's B_gr by about a fifth of what a retrain from the seed does, "
    "several noise bands off, and its collateral changes were drift. Retrain the edit to compare."
)
#: After the collateral chart's caption: the occupations it leaves out for their size (listed apart).
COLLATERAL_SMALL = (
    " Drawn: the edited occupation and those with at least {minimum} men and {minimum} women before and after "
    "(as on the Overview); {n} smaller one(s) move by noise alone and are listed apart. The axis scales to the "
    "edited occupation's change."
)
#: A what-if's job title: the run's name and its edit in full (the name's hash does not tell k).
WHATIF_JOB = "{name} ({strategy})"
BIAS_CHANGE = (
    "Change of B_gr of every occupation (the edited one in orange); error bars: half the noise band's "
    "spread. Purple: another occupation that moved by more than the band's spread (an effect of the edit, "
    "not retraining noise); grey: within the noise."
)
BIAS_CHANGE_PENDING = (
    "Change of B_gr of every occupation (the edited one in orange). Noise band pending: until the 3 retrains "
    "of the unedited graph are done, no change of another occupation can be told apart from retraining drift, "
    "so none is coloured as an effect."
)
REMOVAL_CURVE = (
    "B_gr after masked retraining without k triples: IF-REMOVE (by influence, towards 0) against "
    "Random-REMOVE (the baseline). The grey band is the noise of retraining under other seeds."
)


def random_baseline_sentence(k: int, change: float) -> str:
    """What Random-REMOVE of about as many triples did (:func:`kgbias_core.whatif.runs.random_baseline`)."""
    return f"Random-REMOVE baseline: removing {k} random triples moved B_gr by {fmt(change)} (from the curve below)."


# --- validation ---------------------------------------------------------------------------------
VALIDATION_RUNS = (
    "{n_runs} masked retrains from the model's seed ({epochs} epochs each): the top-k, bottom-k and random-k "
    "triples removed, plus the unedited graph."
)
CHECK_RUNNING = "This check is running (see the jobs below)."
ACCURACY_SCATTER = (
    "Each point removes one set of triples and retrains masked from the same seed. Points on a line through 0 "
    "mean the influence ranks removals correctly; read r against the random sets' noise."
)
NO_CENSUS = (
    "No census file at `{path}`. Get it with `python -m kgbias_core download --data-dir {data_dir}` "
    "(or copy data/occupation_percentages_gender_occ1950.csv of github.com/nikhgarg/EmbeddingDynamicStereotypes "
    "there), then reload."
)
CENSUS_TOO_FEW = (
    "Only {n} paired occupations have census shares in {year}: a correlation needs at least 3. Pick another year."
)
NO_PAIRING = (
    "No census pairing exists for the {dataset} graph: kgbias ships pairings of the FB15k-237 and FB13 "
    "professions only. Pick a model of one of those in the sidebar."
)
CENSUS_TABLE = (
    "Pearson r and p of each measure against log(p/(1−p)), p = census share of men, across the {n} paired "
    "occupations. Du et al. (FB5M, 2018 census): B_gr r = 0.668."
)
CENSUS_TABLE_LEFT_OUT = (
    " {left_out} of the {n_paired} paired occupations are left out of some measure (undefined there, e.g. one "
    "gender only); the table's n says how many each measure uses."
)


def census_table_caption(*, n_paired: int, n_used: Sequence[int]) -> str:
    """:data:`CENSUS_TABLE` with the count the table shows (the most any measure uses), and how many paired
    occupations some measure leaves out, so that the sentence and the table's n never disagree."""
    most = int(max(n_used)) if len(n_used) else 0
    text = CENSUS_TABLE.format(n=most)
    return text + (CENSUS_TABLE_LEFT_OUT.format(left_out=n_paired - int(min(n_used)), n_paired=n_paired)
                   if len(n_used) and int(min(n_used)) < n_paired else "")


CENSUS_SCATTER = (
    "One point per paired occupation: a measure that tracks the census rises to the right. Hover a point for "
    "its name; only the occupations farthest from the trend are named on the chart."
)


# --- Findings page ---------------------------------------------------------------------------------
FINDINGS_INTRO = (
    "Du et al. (2022)'s headline claims next to what each cached model shows, each with its 95% interval "
    "(bootstrap over occupations, Fisher z for census correlations, or ± the retraining noise band) and a "
    "verdict: *reproduces* when the interval excludes no effect on the paper's side, *contradicts* when it "
    "excludes it on the other, *inconclusive* when it holds it. Columns: the paper, this model, and the "
    "default model of each named graph whose findings are computed."
)
FINDINGS_MISSING = "The findings of {model} are not computed yet (or were made from other runs since): about a minute."
FINDINGS_RETRAINS = (
    "Claims 4 (IF-REMOVE against Random-REMOVE) and 5 (Add, c = 0.5) need retrains of {model}: the noise band "
    "(3 retrains under other seeds, once per model), IF-REMOVE and Random-REMOVE of as many triples as are "
    "predicted to bring B_gr to zero, and Add, each {epochs} epochs, where not already stored. The Add run "
    "is saved as a what-if."
)
FINDING_COLUMNS = {"claim": "Claim", "statement": "Du et al. claim", "paper": "Paper (FB5M)"}
FINDINGS_FAMILY = (
    "{model} is one of {n} seeds of family **{family}**: every claim read off the model (1-3, 6) was measured on "
    "each seed too, and its cell gives that seed band after the interval. A direction (*reproduces*, "
    "*contradicts*) is stated only where the interval and the seed band both exclude no effect (0, or one half "
    "for a share); where the seeds disagree the finding is *inconclusive*. Claims 4-5 are retrains: their "
    "interval, the noise band, is already B_gr's spread over retrains under other seeds."
)

# --- links to a view ------------------------------------------------------------------------------
LINK_UNKNOWN = "The link asks for {what} “{value}”, which this view does not have; showing the default instead."
LINK_HEADING = "Link to this view"
LINK_HELP = "Copy it (the button at its right): it opens this page with the same graph, model and choices."

#: The occupation explorer's sections, one tab each (only the open one is drawn).
EXPLORER_TABS = ["B_in per person, by gender", "B_in against B'_in (Du Fig 3)", "Persons",
                 "Compare occupations (Du Fig 2)", INTERSECTIONS]


# --- the person view (issue 28) ------------------------------------------------------------------
PERSON_LINK_TEXT = "open"

# --- the embedding space (issue 28) --------------------------------------------------------------

# --- accuracy against disparity (issue 28) -------------------------------------------------------
#: The sidebar's device line: where measures and new trainings run (KGBIAS_DEVICE), and the retrain rule.
DEVICE_CAPTION = (
    "Device: **{device}** for measures and training (`KGBIAS_DEVICE`); retrains run on the kind of device "
    "their model was trained on · model store: `{store}`"
)
