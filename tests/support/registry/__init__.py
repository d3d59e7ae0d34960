"""The Schema Registry's side: _schemas logs as Confluent, Karapace and Redpanda write them,
topics as a Confluent deployment leaves them, a stand-in of a registry's REST API and
a fake decoder for the dispatch."""
