"""The ``search`` agent's parts: finding and rewriting launch parameters (``params``), the order in
which changes are tried (``space``), the candidates of one solve (``candidates``) and cheap
pre-screening with the agent's own evaluation session (``screen``). The agent is
``kernellab.agents.adapters.search``; its templates live in ``kernellab.kernels``.
"""
