"""agentgym.envs"""
