"""agentgym.simulators"""
