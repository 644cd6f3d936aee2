"""Search: Hypothesis-driven action sequences on a target, guided by the model's explorer."""
