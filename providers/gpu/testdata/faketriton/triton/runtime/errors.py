class OutOfResources(Exception):

    def __init__(self, required, limit, name):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(f"out of resource: {name}, Required: {required}, Hardware limit: {limit}")


class AutotunerError(Exception):
    pass
