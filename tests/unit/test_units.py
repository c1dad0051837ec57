import pytest

from reports.shared.errors import UsageError
from reports.shared.units import format_size, gbps, parse_size


@pytest.mark.parametrize(
    "text,expected",
    [
        ("8", 8),
        ("1K", 1024),
        ("32M", 33554432),
        ("1g", 1 << 30),
        ("2T", 2 << 40),
        ("64KiB", 65536),
        ("0.5K", 512),
    ],
)
def test_parse_size_powers_of_1024(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "12Q", "-1", "1.3", "M", "1 K B"])
def test_parse_size_rejects(bad: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse_size(bad, "--min-bytes")
    assert "--min-bytes" in str(exc.value) and "\n" not in str(exc.value)


def test_format_size() -> None:
    assert format_size(1 << 20) == "1M"
    assert format_size(1536) == "1536"
    assert format_size(3 << 30) == "3G"


def test_gbps_is_decimal() -> None:
    assert gbps(2e9, 1.0) == 2.0
    assert gbps(1, 0) == 0.0
