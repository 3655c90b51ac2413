"""The domain: the replayed state of a campaign and the fold that builds it from events.

`state` (what the stage machines decide from), `replay` (the fold, one handler per event
type), `units` and `inputs` (user-given values turned into validated domain values),
`manifest` (what SPEC.md declares; its YAML front matter read by `front_matter`).
"""
