"""Line numbers of assigned and commented-out keys."""

from __future__ import annotations

from dreamlake.engine.scan.lines import hcl_key_lines, json_key_lines


def test_hcl_lines_top_level_only() -> None:
    text = "\n".join(
        [
            '# region = "us-east-1"',  # 1: commented out
            "tags = {",  # 2
            '  region = "nested"',  # 3: inside a map, not a top-level key
            "}",  # 4
            "desc = <<EOT",  # 5
            'cluster = "in a heredoc"',  # 6
            "EOT",  # 7
            "/* node = 1",  # 8
            "node = 2 */",  # 9
            'cluster   = "gpu" # trailing',  # 10
            '  // queues = ["a"]',  # 11
            'x = "{[("',  # 12: brackets inside a string do not count
            "y = 1",  # 13
        ]
    )
    lines = hcl_key_lines(text)
    assert lines.commented == {"region": 1, "queues": 11}
    assert lines.assigned == {"tags": 2, "desc": 5, "cluster": 10, "x": 12, "y": 13}
    assert lines.line_of("region") == 1
    assert lines.line_of("node") is None


def test_assignment_wins_over_comment() -> None:
    lines = hcl_key_lines('# region = "a"\nregion = "b"\n')
    assert lines.line_of("region") == 2


def test_equality_is_not_assignment() -> None:
    assert hcl_key_lines("# a == b\n").line_of("a") is None


def test_json_lines() -> None:
    text = (
        '{\n  "host": null,\n  "nested": {"port": 1},\n  "user":\n    "ops",\n  "q": ["host"]\n}\n'
    )
    lines = json_key_lines(text)
    assert lines.assigned == {"host": 2, "nested": 3, "user": 4, "q": 6}


def test_repeated_assignment() -> None:
    lines = hcl_key_lines("a = 1\nb = 2\n# a = 0\na = 3\n")
    assert lines.repeated == {"a": 4}
    assert lines.line_of("a") == 1
