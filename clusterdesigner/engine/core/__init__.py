"""The small shared core every part may import: the one error type, hardware and model shapes, the catalog as
engine inputs (accelerators, fabrics, cloud offerings and price freshness), the bounds of every cost input,
the spec's field rules, the JSON form of typed results, the root finder, the units of time and ENGINE_VERSION.

May import: nothing else in the engine.

Modules (what each owns, from its docstring; its public functions and classes):
    arrays -- Keys over integer columns: one int64 per row, so grouping and first-seen passes sort one array,
        not rows.
        public: packed_key
    bounds -- The bounds of every number a cost input may take, written once: the design spec's parser
        (engine/design/spec.py), the cost engine (engine/cost/cost_request.py) and the serving engine's cost
        section read this table, so that a value the spec accepts is never refused by an engine (issue 14,
        "one design spec").
        public: Bound
    catalog -- The catalog as the engines see it: plain records (a saved snapshot, or rows read by the caller)
        → specs.
        public: CatalogSpecs, specs_from_records
    errors -- The engine's one error type.
        public: EngineError, InputError, UnknownReferenceError, SolverLimitError, InfeasibleError, under
    hardware -- Hardware inputs shared by the training and cost engines.
        public: AcceleratorSpec, FabricSpec, accelerator_from_dict, fabric_from_dict
    json_object -- The JSON form of the engines' typed results: a frozen dataclass that mixes in
        :class:`JsonObject` is written by ``to_json()`` as the JSON object the engine has always returned (its
        fields are the keys, in declaration order) and read back by ``from_json()``; nested dataclasses,
        tuples (JSON lists) and mappings (JSON objects) follow the fields' types.
        public: omit, written_with, since, optional, hints, dump, load, JsonObject
    model -- Transformer shape, parameter counts and FLOPs per token.
        public: ModelShape, op_checkpoint_flops_fwd_per_token, hardware_flops_per_token, model_from_dict
    offerings -- Catalog inputs the cost engine needs beyond :mod:`clusterdesigner.engine.core.hardware`.
        public: Freshness, CloudOfferingSpec, StorageTierSpec, SwitchSpec, ServerTypeSpec, default_offering,
            owner_offering, cloud_offering_from_dict, storage_tier_from_dict, switch_from_dict,
            server_type_from_dict
    presets -- Named model shapes (the model picker's list), each with the source of its numbers.
    roots -- One root finder for the cost engine's thresholds: where a gap between two costs is zero as one
        input moves.
        public: root
    spec_rules -- The rules a spec field is checked by, and the one parser that applies them (types, known
        keys, ranges, defaults), with SpecError naming every refused field by its path.
        public: Rule, SpecError, type_error, check_value, parse_object
    units -- Units of time the parts share, defined once: the cost engine bills by them and the serving engine
        states them among its assumptions.
    version -- The engines' output version: a stored evaluation is keyed by it, so a result computed before an
        engine change is recomputed on its next view instead of being shown without the figures the new engine
        adds.
"""
