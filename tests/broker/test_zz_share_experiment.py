import time
import pytest
pytestmark = pytest.mark.broker


def test_exp(restore_target_broker):
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource, ConfigEntry, AlterConfigOpType
    b = restore_target_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": b, "log_level": 0})
    for f in admin.create_topics([NewTopic("exp-t", 1, 1)]).values():
        f.result(30)
    res = ConfigResource(ConfigResource.Type.GROUP, "exp-g", incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    try:
        print("alter", [f.result(30) for f in admin.incremental_alter_configs([res]).values()])
        print("describe", {k: v.value for k, v in list(admin.describe_configs([ConfigResource(ConfigResource.Type.GROUP, "exp-g")]).values())[0].result(30).items() if "share" in k})
    except Exception as e:
        print("config err", repr(e))
    c = ck.ShareConsumer({"bootstrap.servers": b, "group.id": "exp-g", "log_level": 0})
    c.subscribe(["exp-t"])
    t = time.monotonic()
    while time.monotonic() - t < 8:
        c.poll(0.5)
    for name, call in [("lcg", lambda: admin.list_consumer_groups(request_timeout=30).result(35)),
                       ("lcg-types", lambda: admin.list_consumer_groups(request_timeout=30, types={ck.ConsumerGroupType.UNKNOWN}).result(35)),
                       ("list_groups", lambda: admin.list_groups(timeout=30)),
                       ("describe", lambda: list(admin.describe_consumer_groups(["exp-g"], request_timeout=30).values())[0].result(35))]:
        try:
            r = call()
            if hasattr(r, "valid"):
                print(name, [(g.group_id, g.state, g.type) for g in r.valid], r.errors)
            elif isinstance(r, list):
                print(name, [(g.id, g.state, g.protocol_type, len(g.members)) for g in r])
            else:
                print(name, r.group_id, r.state, getattr(r, "type", None), len(r.members))
        except Exception as e:
            print(name, "ERR", repr(e))
    c.close()
    for name, call in [("lcg", lambda: admin.list_consumer_groups(request_timeout=30).result(35)),
                       ("list_groups", lambda: admin.list_groups(timeout=30))]:
        try:
            r = call()
            if hasattr(r, "valid"):
                print(name, [(g.group_id, g.state, g.type) for g in r.valid], r.errors)
            else:
                print(name, [(g.id, g.state, g.protocol_type, len(g.members)) for g in r])
        except Exception as e:
            print(name, "ERR", repr(e))
