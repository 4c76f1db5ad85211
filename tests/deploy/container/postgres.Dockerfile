# A stand-in for the official postgres:15 image, for tests/deploy/test_container_run.py only: this
# machine reaches no container registry, so the test builds PostgreSQL 15 from Debian's packages on
# the same local Debian base as the server's image.  It honours what compose.yaml uses of the
# official image: POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, the data in /var/lib/postgresql/data,
# password logins over the network, pg_isready on the PATH.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENV PGDATA=/var/lib/postgresql/data
VOLUME ["/var/lib/postgresql/data"]
USER postgres
EXPOSE 5432
STOPSIGNAL SIGINT
CMD ["/usr/local/bin/postgres-entrypoint.sh"]
