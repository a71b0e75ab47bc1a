"""The parts of the ``api`` agent: a tool-using loop that talks to a model over HTTP.

``conversation`` holds the provider-neutral records (messages, tool calls, replies);
``openai_chat`` and ``anthropic_messages`` translate them to and from the two wire formats;
``transport`` sends requests (httpx, imported lazily: the base install does not carry it) with the
retry policy of ``retry``; ``tools`` are the workspace tools the model calls; ``tool_loop`` runs the
conversation within its limits; ``pricing`` turns tokens into dollars; ``prompt`` says what to do;
``options`` validates the agent's options.
"""
