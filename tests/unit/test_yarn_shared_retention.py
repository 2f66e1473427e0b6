"""Which shared files on HDFS retention removes: unused for the retention, and by every active application."""

from __future__ import annotations

from jobcluster.backends.yarn.rm_rest import report_of
from jobcluster.backends.yarn.shared_retention import SharedFile, cutoff, expired, oldest_start

DAY_MS = 86_400_000
NOW = 1_800_000_000_000
WEEK = 7 * 86_400.0


def files(*ages_days: float) -> list[SharedFile]:
    return [SharedFile(f"/user/a/.jobcluster/python/f{i}", int(NOW - age * DAY_MS)) for i, age in enumerate(ages_days)]


def test_unused_for_longer_than_the_retention_is_removed():
    old, recent = files(8, 6)
    assert expired([old, recent], NOW, WEEK, oldest_active_start_ms=None) == [old]


def test_a_file_used_after_the_oldest_active_application_started_is_kept():
    old, older = files(8, 30)
    # an application submitted 10 days ago still runs: it may have registered the 8-day-old file
    assert expired([old, older], NOW, WEEK, oldest_active_start_ms=NOW - 10 * DAY_MS) == [older]


def test_an_active_application_of_unknown_start_keeps_everything():
    assert expired(files(100), NOW, WEEK, oldest_active_start_ms=oldest_start([0, NOW])) == []


def test_no_access_time_kept_by_hdfs_means_never_removed():
    assert expired([SharedFile("/x", 0)], NOW, 0.0, None) == []


def test_a_zero_retention_removes_everything_unused_since_the_oldest_active_start():
    used_now, used_before = files(0, 0.5)
    assert expired([used_now, used_before], NOW + 1, 0.0, oldest_active_start_ms=NOW - DAY_MS // 4) == [used_before]


def test_cutoff_is_the_earlier_of_retention_and_oldest_start():
    assert cutoff(NOW, WEEK, None) == NOW - 7 * DAY_MS
    assert cutoff(NOW, WEEK, NOW - DAY_MS) == NOW - 7 * DAY_MS
    assert cutoff(NOW, WEEK, NOW - 9 * DAY_MS) == NOW - 9 * DAY_MS
    assert oldest_start([]) is None


def test_rest_reports_carry_the_start_time():
    assert report_of({"id": "application_1_0001", "startedTime": 1234}).start_time_ms == 1234
    assert report_of({"id": "application_1_0001"}).start_time_ms == 0
