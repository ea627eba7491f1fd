"""The events vocabulary, shared by the ingress, the starter and status back (the processes themselves are entry
points: ``entry/ingress.py``, ``entry/starter.py``, run by ``python -m entry.events``).

* ``verify``     - signature, headers, timestamp and strict JSON checks on a webhook delivery
* ``bus``        - JetStream streams, headers, the delivery ledger
* ``triggers``   - the rules and the workflow ids (business keys): GitHub's and Linear's, with GitLab's in
  ``gitlab_rules`` and what they decide (``Decision``, ``Origin``, the ids) in ``decision``; ``payloads`` the typed
  webhook bodies
* ``gateway``    - the Temporal calls of the starter (deterministic request ids, trace header)
* ``github_api`` / ``gitlab_api`` / ``linear_api`` - status back (comments and notes, labels, pull and merge
  requests, pushes; agent activities), idempotent
* ``config``     - EventsConfig (env ``BOSUN_EVENTS_*`` and a JSON file)
* ``tracing``    - W3C trace context carried from the webhook into the workflow

See docs/EVENTS.md.
"""
