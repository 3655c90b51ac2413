"""The stage machines: pure deciders over replayed state, one module per protocol concern.

`stages.decide.decide(state, command)` returns a `Decision` (the events to append, and
warnings) or a `Refusal` naming its rule; `stages.allowed.allowed(state)` lists the protocol
steps allowed next. Each name is imported from its own module, so a read imports only the
deciders it uses.
"""
