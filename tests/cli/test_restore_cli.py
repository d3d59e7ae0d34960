"""``kafkarec restore``'s usage errors: one line, exit status 2, nothing asked of any cluster."""
from kafkarec.cli.main import main


def test_target_bootstrap_is_required(capfd):
    assert main(["restore", "logs"]) == 2
    assert "--target-bootstrap" in capfd.readouterr().err


def test_bad_options_are_usage_errors(tmp_path, capfd):
    for args, message in [(["--rename", "a"], "expected SOURCE=TARGET"),
                          (["--no-groups", "--groups-csv", "g.csv"], "--no-groups with --groups-csv"),
                          (["--no-groups", "--share-groups-acknowledge"], "--share-groups-acknowledge or"),
                          (["--target-property", "x"], "--target-property 'x': expected KEY=VALUE"),
                          (["--transaction-records", "0"], "at least 1"),
                          # an output path that cannot be written: refused before anything is restored
                          (["--offset-map", str(tmp_path / "no" / "map.csv")], "is not a folder"),
                          (["--groups-csv", str(tmp_path / "no" / "g.csv")], "is not a folder")]:
        status = main(["restore", str(tmp_path), "--target-bootstrap", "127.0.0.1:1", *args])
        err = capfd.readouterr().err
        assert status == 2 and err.startswith("kafkarec restore: error: ") and message in err, (args, err)


def test_a_missing_client_is_named_with_its_extra(tmp_path, capfd, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)     # as if not installed
    assert main(["restore", str(tmp_path), "--target-bootstrap", "127.0.0.1:1"]) == 2
    assert "pip install 'kafkarec[restore]'" in capfd.readouterr().err
