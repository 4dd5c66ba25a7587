"""The long-running agent (``acceptmon run``); its package imports nothing, so ``startup`` stays light.

Every command's parser shows the ``run`` help with the agent's exit codes (``startup``):
when this package imported the agent (``agent.py``), each ``oneshot`` or ``runs`` loaded
the agent, its notifier and its settings first (~90 ms before the first line).
"""
