"""Entry points: the processes and commands a person or the stack starts. Nothing imports them.

* ``cli``     - ``bosun`` (``cli_sandbox``, ``cli_search``: its ``sandbox`` and ``search`` subcommands)
* ``stack``   - ``bosun up``/``down``/``status``: the supervisor of the embedded stack
* ``worker``  - the Temporal worker (workflows and activities of one host)
* ``events``  - ``python -m entry.events ingress|starter``: ``ingress`` (webhooks -> JetStream) and
  ``starter`` (JetStream -> TaskWorkflow)
* ``demo``    - ``make demo``
"""
