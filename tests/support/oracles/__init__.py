"""Independent answers kafkarec is compared with: the reference encoder, other clients'
batches, Kafka's and Java's own libraries run in one JVM each, and models written
from Kafka's source."""
