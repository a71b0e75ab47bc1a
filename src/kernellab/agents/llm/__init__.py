"""The parts of the ``api`` agent: a tool-using loop that talks to a model through its vendor's SDK.

``conversation`` holds the provider-neutral records (messages, tool calls, replies);
``openai_chat`` and ``anthropic_messages`` translate them to and from the official ``openai`` and
``anthropic`` SDKs (imported lazily: the ``llm`` extra, not the base install); ``transport`` runs
each SDK call under the retry policy of ``retry`` and the proposal's deadline; ``tools`` are the workspace tools the model calls; ``tool_loop`` runs the
conversation within its limits; ``pricing`` turns tokens into dollars; ``prompt`` says what to do;
``options`` validates the agent's options.
"""
