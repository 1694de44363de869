"""The pure core: what the replay decides, with no boto3, clock, random source or I/O."""
