"""The one error type for bad input: it names the field or line and what is allowed."""


class InputError(ValueError):
    """Bad scenario, workload, trace or log input.

    The message always names where the problem is (a dotted config key, a file and line, a column)
    and what would be accepted, so the CLI can print it as one line and the app as one message.
    """

    def __init__(self, where: str, problem: str):
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")
