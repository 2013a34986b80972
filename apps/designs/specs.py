"""The design spec at the API's edge: the DRF layer keeps the envelope (name, visibility, spec) and hands the
spec to the engine's parser, which is its one definition (clusterdesigner/engine/design/spec.py: every
section's fields, bounds and defaults, and the engines' requests built from it).

A spec is a JSON object (README, "Interfaces", Designs):
    workload:    {model: {preset} | shape,
                  training: {tokens, global_batch_tokens | global_batch_seqs, precision}}
    cluster:     {accelerator, gpus_per_node, nodes, fabric, oversubscription, storage}
    parallelism: a layout dict, or "search"
    costs:       {horizon_years, utilization, on_prem: {...},
                  cloud: [{offering, pricing_models, usd_per_node_hour?}],
                  cashflow?, uncertainty?, colocation?, storage?: cost-engine inputs by their engine names}
    goals:       {deadline_days?, budget_usd?, budget_npv_usd?}, optional: a deadline for the training
                 run in days, a budget in USD per run and a budget in USD of NPV for the whole horizon; the
                 evaluation's ``verdict`` says whether the design meets them, for the option the rent-or-own
                 verdict picks (clusterdesigner/engine/cost/verdict.py). Any other goal is refused, naming it.
    serving:     optional: a serving request (docs/serving-engine.md) without model, accelerator and
                 gpus_per_node, which are the design's; the evaluation's ``serving`` is its estimate.
    rl:          optional: an RL post-training run of the design's model (engine/rl/rl_request.py); the
                 evaluation's ``rl`` is its estimate and the costs price its days; ``rl.rollout`` a
                 rollout pool of its own part (a mixed fleet), priced on its own server and offerings
                 (the evaluation's ``rl_fleet``), the cluster then being the trainer pool.
"""

from __future__ import annotations

from clusterdesigner.engine.core import offerings
from clusterdesigner.engine.design import spec as design_spec

PRICING_MODELS = list(offerings.PRICING_MODELS)
# The spec's sections of cost-engine inputs beyond owning's (on_prem) and the cloud choices.
ENGINE_SECTIONS = design_spec.ENGINE_SECTIONS

spec_with_defaults = design_spec.with_defaults
training_request = design_spec.training_request
cost_requests = design_spec.cost_requests
serving_request = design_spec.serving_request
