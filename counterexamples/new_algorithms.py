"""placeholder"""
ALGORITHM_SAMPLER_RULES: tuple = ()
ALGORITHM_STEP_RULES: tuple = ()
