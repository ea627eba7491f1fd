"""bosun's events subsystem: GitHub/Linear webhooks -> JetStream -> TaskWorkflow starts, and status back.

* ``ingress``    - ASGI app (starlette): verify, publish to ``events.<source>.<event>``, 200 only after PubAck
* ``starter``    - durable pull consumer: trigger rules -> start / signal-with-start / cancel, then ack
* ``triggers``   - the rules and the workflow ids (business keys)
* ``gateway``    - the Temporal calls (deterministic request ids, trace header)
* ``bus``        - streams, headers, the delivery ledger
* ``github_api`` / ``linear_api`` - status back (comments, labels, PRs, pushes; agent activities), idempotent
* ``config``     - EventsConfig (env ``BOSUN_EVENTS_*`` and a JSON file)

Run: ``python -m infra.events ingress|starter``. See docs/EVENTS.md.
"""

from infra.events.config import EventsConfig, TriggerRules, load_events_config
from infra.events.gateway import FOLLOW_UP_SIGNAL
from infra.events.ingress import create_app, run_ingress
from infra.events.starter import Starter, run_starter, starter_health

__all__ = ["FOLLOW_UP_SIGNAL", "EventsConfig", "Starter", "TriggerRules", "create_app", "load_events_config",
           "run_ingress", "run_starter", "starter_health"]
