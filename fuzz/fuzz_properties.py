"""Java properties text (kafkarec.log._java_properties.load_properties, the one reader of the tiered-storage
plugin's ``tieredStorageConfig``) against Java's own ``Properties.load``: one long-running JVM
(tests/java/PropertiesOracle.java through tests/support/oracles/properties_oracle.py) asked each input through
its pipe.  The same keys and values as Java, or a PropertiesError where Java throws; anything else is a
finding.  Inputs are either any text or bytes mapped onto the characters Properties.load treats
specially, so escapes, separators, comments and continuations meet often."""
import os
import sys

import atheris

from _harness import ROOT, run

sys.path.insert(0, os.path.join(ROOT, "tests"))
from support.oracles.properties_oracle import PropertiesOracle  # noqa: E402

from kafkarec.log._java_properties import load_properties  # noqa: E402
from kafkarec.errors import PropertiesError  # noqa: E402

SPECIAL = "\\u=: \t\f\r\n#!0AdDeFxk.\x0b\u2028\u00e9\U0001F600"
JAVA = PropertiesOracle()


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    if fdp.ConsumeBool():
        text = "".join(SPECIAL[b % len(SPECIAL)] for b in fdp.ConsumeBytes(fdp.remaining_bytes()))
    else:
        text = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
    java, = JAVA.ask([text])
    try:
        ours = load_properties(text)
    except PropertiesError:
        assert not isinstance(java, dict), f"{text!r}: Java reads {java!r}"
        return
    assert ours == java, f"{text!r}: kafkarec reads {ours!r}, Java {java!r}"


if __name__ == "__main__":
    run(test_one_input)
