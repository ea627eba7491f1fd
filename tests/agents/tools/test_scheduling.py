from agents.tools.scheduling import plan_batches


def test_reads_run_together():
    assert plan_batches([None, None, None]) == [[0, 1, 2]]


def test_writes_to_different_files_run_together_same_file_serialized():
    assert plan_batches(["a", "b", "a"]) == [[0, 1], [2]]


def test_order_is_kept_between_reads_and_writes():
    assert plan_batches([None, "a", None, None]) == [[0], [1], [2, 3]]


def test_commands_run_alone():
    assert plan_batches(["a", "*", "b", None]) == [[0], [1], [2], [3]]
    assert plan_batches(["*", "*"]) == [[0], [1]]


def test_every_call_is_scheduled_exactly_once():
    import random

    rng = random.Random(7)
    for _ in range(200):
        keys = [rng.choice([None, "a", "b", "c", "*"]) for _ in range(rng.randint(0, 12))]
        flat = [i for b in plan_batches(keys) for i in b]
        assert flat == list(range(len(keys)))
