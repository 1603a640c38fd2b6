"""The sidebar every page shares, and the run it defines.

The run's settings live in three places that must agree: the widgets (keys ``ctl_*``), the
last valid ``RunSpec`` (``st.session_state.spec``), and the URL query string, which is written
from the spec on every run so a shared link opens the same run. Widget values are re-seeded
from the spec when Streamlit drops them (it does on a page switch), so every page shows the same
settings.
"""

import streamlit as st

from models.tokenizer import UnknownCharactersError
from specviz.core.engine import Generation, Session, Settings
from specviz.core.markup import md
from specviz.drafters import DRAFTERS, SAMPLED_TREE_DRAFTERS
from specviz.teaching.presets import APP_PRESETS, preset
from specviz.teaching.query import APP_LIMITS, RunSpec, from_query, to_query
from specviz.verifiers import SAMPLINGS, VARIANTS, VERIFIERS
from ui.common import costs_for, models_or_stop

FREE_TEXT = "Free text"

HELP = {
    "drafter": "Who proposes the K characters the target checks in one pass. 'none' is plain decoding.",
    "k": "Draft length: characters proposed per round (the depth limit for trees).",
    "k_auto": "Adaptive K: each round picks the K (0 to the slider's K) with the most expected characters per unit "
    "of time, from past rounds' acceptance and the measured cost of a pass. The step page shows why.",
    "temperature": "Target and draft temperature. 0 = greedy: accept exactly the target's argmax.",
    "min_context_count": "Trigram: fall back to the bigram row when the two-character context was seen fewer "
    "times than this in training.",
    "seed": "Same seed and settings, same run.",
    "max_new_tokens": "Characters to generate.",
    "verification": "How the target decides which drafted characters to keep. Lossy rules are kept to show them "
    "failing in the Exactness lab.\n\n"
    + "\n\n".join(f"- **{v.name}**{'' if v.lossless else ' (LOSSY)'}: {v.summary}" for v in VERIFIERS.values()),
    "trie_n": "Trie: n-gram length stored from the prompt.",
    "trie_prefix_len": "Trie: L_p, the length of the context suffix matched against the trie.",
    "trie_num_draft": "Trie: the most nodes in the pruned draft tree.",
    "nasd_n": "NASD: context length n of the adaptive storage (n-1 tokens predict the next).",
    "nasd_filler_top_k": "NASD: the target's top-k tokens added to the storage after each round.",
    "nasd_stop_if_unknown": "NASD: stop drafting at an unseen context instead of filling with the commonest token.",
    "lookup_max_ngram": "Prompt lookup: the longest n-gram of the context searched for in the prompt (its window).",
    "lookup_min_ngram": "Prompt lookup: the shortest n-gram tried before giving up.",
    "distilled_context": "Distilled: L, the longest context (in characters) looked up in the table of the target's "
    "own predictions; shorter ones are the back-off.",
    "distilled_nodes": "Distilled tree: the node budget of the best-first draft tree.",
    "suffix_max_match": "Suffix decoding: the longest suffix of the context looked up in the context and corpus indices.",
    "suffix_min_prob": "Suffix decoding: grow the candidate tree while a path's empirical probability (its count over "
    "the match's) is at least this; lower grows bigger trees.",
    "suffix_max_nodes": "Suffix decoding: the most nodes in the candidate tree.",
    "layer_skip_layers": "Layer-skip: how many of the target's first layers draft, exiting early through its final "
    "norm and head; more layers draft better and cost more.",
    "neural_tree_nodes": "Neural tree: the node budget of the tree grown from the tiny model's confidence.",
    "neural_tree_children": "Neural tree: the most children a node gets (its top tokens at T = 0, draws at T > 0).",
    "medusa_nodes": "Medusa: the node budget of the candidate tree (the paths with the highest product of head "
    "probabilities are kept).",
    "medusa_top_k": "Medusa: the top tokens of each head; head i's are the candidates at depth i.",
    "lookahead_window": "Lookahead: W, the columns of the Jacobi window of guessed future characters that rides in "
    "every verify pass (more columns: more n-grams per pass, a longer pass).",
    "lookahead_ngram": "Lookahead: N, the n-gram size; the window keeps the last N - 1 Jacobi steps and candidates "
    "are up to N - 1 characters deep.",
    "lookahead_candidates": "Lookahead: G, the n-grams kept per first character in the pool, all verified as one tree.",
    "eagle_ttt": "EAGLE-3: use the head trained with training-time test (its own fed-back states unrolled in "
    "training); off: the same head trained on step 0 only, whose later draft steps fall apart.",
    "eagle_tree_nodes": "EAGLE-3 tree: the node budget of the dynamic tree grown from the head's confidence.",
    "eagle_tree_children": "EAGLE-3 tree: the most children a node gets.",
    "tree_sampling": "How a sampled tree's siblings are drawn from the draft's q: with replacement (SpecInfer, "
    "i.i.d., repeats allowed) or without (Sequoia, each from q minus the earlier siblings). Both are lossless "
    "when verified as drawn.",
}


def verifier_label(name: str) -> str:
    """A verifier's option label: lossy ones say so where they are chosen."""
    return name if VERIFIERS[name].lossless else f"{name} (lossy)"


def _number(name: str, label: str, step=1):
    lo, hi = APP_LIMITS[name]
    return st.number_input(label, lo, hi, step=step, key=f"ctl_{name}", help=HELP[name])


def _on_preset() -> None:
    name = st.session_state.ctl_preset
    if name != FREE_TEXT:
        st.session_state.ctl_prompt = preset(name).text


def _seed_widgets(spec: RunSpec) -> None:
    """Give every sidebar widget its value before it is drawn: the value it already has, or the
    spec's where Streamlit dropped it (it does on a page switch). Written back on every run, not
    only when missing: a value the script sets travels with the widget to the browser. Under a
    class of 30 (benchmarks/class_size.py) a browser redrew the sidebar's widgets from their bare
    defaults (an empty prompt, drafter 'none', K = 1) and sent those back; now a redrawn widget
    shows, and returns, the run's value."""
    names = [p.name for p in APP_PRESETS]
    values = {f"ctl_{name}": value for name, value in vars(spec.settings).items()}
    values |= {"ctl_prompt": spec.prompt, "ctl_preset": spec.preset if spec.preset in names else FREE_TEXT}
    for key, value in values.items():
        st.session_state[key] = st.session_state.get(key, value)


def sidebar() -> RunSpec:
    """Render the shared controls; returns the run they describe (not yet validated)."""
    if "spec" not in st.session_state:  # a new browser session: start from the link
        spec, problems = from_query(st.query_params.to_dict())
        st.session_state.spec, st.session_state.query_problems = spec, problems
    _seed_widgets(st.session_state.spec)
    with st.sidebar:
        for problem in st.session_state.pop("query_problems", []):
            st.warning(f"Link: {md(problem)}")
        st.selectbox("Prompt", [FREE_TEXT] + [p.name for p in APP_PRESETS], key="ctl_preset", on_change=_on_preset,
                     help="Presets that show different behaviour; edit the text freely.")  # fmt: skip
        st.text_area("Prompt text", key="ctl_prompt", height=110, label_visibility="collapsed")
        st.selectbox("Drafter", DRAFTERS, key="ctl_drafter", help=HELP["drafter"])
        st.slider("K (draft length)", *APP_LIMITS["k"], key="ctl_k", help=HELP["k"])
        st.checkbox("Adaptive K (at most K)", key="ctl_k_auto", help=HELP["k_auto"])
        st.slider("Temperature", *APP_LIMITS["temperature"], step=0.05, key="ctl_temperature", help=HELP["temperature"])
        c1, c2 = st.columns(2)
        with c1:
            _number("max_new_tokens", "Max new tokens", 10)
        with c2:
            _number("seed", "Seed")
        st.slider("min_context_count", *APP_LIMITS["min_context_count"], key="ctl_min_context_count",
                  help=HELP["min_context_count"])  # fmt: skip
        st.selectbox("Verification", VARIANTS, key="ctl_verification", help=HELP["verification"],
                     format_func=verifier_label)  # fmt: skip
        if st.session_state.ctl_drafter in SAMPLED_TREE_DRAFTERS:
            st.selectbox("Tree sampling", SAMPLINGS, key="ctl_tree_sampling", help=HELP["tree_sampling"])
        with st.expander("Drafter knobs"):
            _number("trie_n", "Trie n")
            _number("trie_prefix_len", "Trie L_p")
            _number("trie_num_draft", "Trie num_draft")
            _number("nasd_n", "NASD n")
            _number("nasd_filler_top_k", "NASD filler_top_k")
            st.checkbox("NASD stop_if_unknown", key="ctl_nasd_stop_if_unknown", help=HELP["nasd_stop_if_unknown"])
            _number("lookup_max_ngram", "Prompt-lookup window (max n-gram)")
            _number("lookup_min_ngram", "Prompt-lookup min n-gram")
            _number("distilled_context", "Distilled L (context)")
            _number("distilled_nodes", "Distilled tree nodes")
            _number("suffix_max_match", "Suffix max match")
            _number("suffix_min_prob", "Suffix min path probability", 0.05)
            _number("suffix_max_nodes", "Suffix tree nodes")
            _number("layer_skip_layers", "Layer-skip draft layers")
            _number("neural_tree_nodes", "Neural tree nodes")
            _number("neural_tree_children", "Neural tree children per node")
            _number("medusa_nodes", "Medusa tree nodes")
            _number("medusa_top_k", "Medusa candidates per head")
            _number("lookahead_window", "Lookahead window W")
            _number("lookahead_ngram", "Lookahead n-gram N")
            _number("lookahead_candidates", "Lookahead candidates G")
            st.checkbox("EAGLE-3 head trained with TTT", key="ctl_eagle_ttt", help=HELP["eagle_ttt"])
            _number("eagle_tree_nodes", "EAGLE-3 tree nodes")
            _number("eagle_tree_children", "EAGLE-3 tree children per node")
    settings = Settings(**{name: st.session_state[f"ctl_{name}"] for name in vars(Settings())})
    text = st.session_state.ctl_prompt
    chosen = st.session_state.ctl_preset
    return RunSpec(settings, text, chosen if chosen != FREE_TEXT and preset(chosen).text == text else None)


def _drop_characters(bad: list[str]) -> None:
    st.session_state.ctl_prompt = "".join(c for c in st.session_state.ctl_prompt if c not in bad)
    st.session_state.ctl_preset = FREE_TEXT


def _run_key(spec: RunSpec) -> tuple:
    return spec.settings, spec.prompt


def checked_prompt(spec: RunSpec, tokenizer) -> list[int] | None:
    """The prompt's ids when the spec is valid; otherwise None, after saying what is wrong."""
    try:
        spec.settings.check()
        if not spec.prompt:
            raise ValueError("The prompt is empty: type a few characters, or pick a preset.")
        return tokenizer.encode(spec.prompt)
    except UnknownCharactersError as e:
        st.error(f"The prompt has {md(e)}. The model only knows Tiny Shakespeare's 65 characters.")
        st.button("Drop them from the prompt", on_click=_drop_characters, args=(e.chars,), key="drop_chars")
    except ValueError as e:
        st.error(md(e))
    return None


def valid_spec(target) -> tuple[RunSpec, list[int]] | None:
    """For pages that compute their own runs from the sidebar (no Session): the sidebar's spec
    and prompt ids when valid, which then become the app's run (so other pages show the same
    settings); otherwise None, after a message."""
    spec = sidebar()
    ids = checked_prompt(spec, target.tokenizer)
    if ids is not None:
        st.session_state.spec = spec
    st.query_params.from_dict(to_query(st.session_state.spec))
    return None if ids is None else (spec, ids)


@st.cache_resource(max_entries=64, show_spinner=False)
def shared_generation(settings: Settings, ids: tuple[int, ...]) -> Generation:
    """One generation per settings and prompt for every browser session of this server: a class
    following one preset computes each round once, and each student keeps a cursor of their own
    (Session). Not st.cache_data: that hands each caller a copy, so a run that grows as anyone
    steps would be computed again per student. Shared, never mutated outside its lock; the
    settings (drafter, knobs, seed, ...) and the prompt are the key, and the models are the app's
    one cached pair."""
    target, tiny = models_or_stop()
    return Generation(target, list(ids), settings, tiny.model, costs=costs_for(settings))


def active_session() -> Session | None:
    """The sidebar's run, restarted from the prompt whenever a setting changes (its rounds are
    shared with every session on the same settings and prompt: shared_generation).

    Bad input gets a message in the page and the previous run stays on screen: only a spec
    that made a Session replaces the one shown."""
    target, tiny = models_or_stop()
    spec = sidebar()
    ids = checked_prompt(spec, target.tokenizer)
    if ids is not None:
        key = _run_key(spec)
        if st.session_state.get("run_key") != key:
            try:
                generation = shared_generation(spec.settings, tuple(ids))
                session = Session(target, ids, spec.settings, tiny.model, generation)
            except (ValueError, RuntimeError) as e:
                st.error(f"The run could not start: {md(e)}")
            else:
                st.session_state.run, st.session_state.run_key, st.session_state.spec = session, key, spec
                st.session_state.scrub = 0
        B = target.config.block_size
        if len(ids) > B:
            st.info(f"The prompt has {len(ids):,} characters and the model sees at most {B} at a time: the target "
                    f"reads the last {B // 2}–{B} characters (the window moves half a block at a time, and the cache "
                    f"is re-prefilled when it does). Drafters that read the prompt still use all of it.")  # fmt: skip
    st.query_params.from_dict(to_query(st.session_state.spec))
    return st.session_state.get("run")
