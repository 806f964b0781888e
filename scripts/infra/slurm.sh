#!/usr/bin/env bash
# A private local Slurm cluster on 127.0.0.1 for the `slurm` tests and `torchx run -s slurm`:
# munged + MariaDB + slurmdbd (so `sacct` works) + slurmctld + one slurmd per node.
#
#   slurm.sh start   install what is missing (Debian: slurmctld slurmd slurm-client slurmdbd munge
#                    mariadb-server), write the config, start the daemons, wait until every node is
#                    idle; prints SLURM_CONF=... (the only variable the Slurm commands need)
#   slurm.sh env     prints SLURM_CONF=... when the cluster answers (exit 1 otherwise)
#   slurm.sh stop    cancels every job of this cluster, then stops its daemons (nothing is left)
#
# Config, state, spool, the munge key and the accounting database live under
# $TORCHX_FLOW_CACHE/slurm; pid files, logs and sockets under $TORCHX_FLOW_RUN/slurm. Nothing goes to
# /etc or the checkout. Ports (127.0.0.1 only): slurmctld 16817, slurmdbd 16819, MariaDB 16830,
# slurmd 16821 + node index. The nodes are named by the host names that resolve to a loopback
# address (the machine's own name, other /etc/hosts names of 127.x, else 127.0.0.N), so a job's
# node list is a host name the replicas can reach: two nodes (Debian's Slurm runs several slurmd on
# one host with `slurmd -N`; each component of a heterogeneous job needs a node of its own). Each
# node offers 4 CPUs and 4 GiB whatever the machine has (`SlurmdParameters=config_overrides`).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

S=$CACHE/slurm
R=$RUN/slurm
CONF=$S/etc/slurm.conf
CTLD_PORT=16817
DBD_PORT=16819
DB_PORT=16830
NODE_PORT=16821
NODE_CPUS=4
NODE_MEM=4096
export SLURM_CONF=$CONF

# loopback_names: the node names: $TORCHX_FLOW_SLURM_NODES when set, else up to two host names
# other than `localhost` (which Slurm replaces by the machine's name) that resolve to 127.x (the
# machine's own name first, then /etc/hosts order), completed to two with loopback addresses
# (127.0.0.2, ...), which are host names every replica can reach too.
loopback_names() {
  if [ -n "${TORCHX_FLOW_SLURM_NODES:-}" ]; then echo "$TORCHX_FLOW_SLURM_NODES"; return; fi
  local names=() n addr i=2
  for n in "$(hostname -s 2>/dev/null || true)" $(awk '$1 ~ /^127\./ {for (i = 2; i <= NF; i++) print $i}' /etc/hosts 2>/dev/null); do
    [ -n "$n" ] && [ "$n" != localhost ] && [ ${#names[@]} -lt 2 ] || continue
    addr=$(getent ahostsv4 "$n" 2>/dev/null | awk 'NR==1{print $1}')
    case "$addr" in 127.*) ;; *) continue ;; esac
    case " ${names[*]:-} " in *" $n "*) continue ;; esac
    names+=("$n")
  done
  while [ ${#names[@]} -lt 2 ]; do names+=("127.0.0.$i"); i=$((i + 1)); done
  echo "${names[@]}"
}

nodes() { [ -f "$S/etc/nodes" ] && cat "$S/etc/nodes"; }

answers() { timeout 5 scontrol ping 2>/dev/null | grep -q "is UP"; }

cmd_env() {
  [ -f "$CONF" ] && answers || return 1
  echo "SLURM_CONF=$CONF"
}

write_config() {
  mkdir -p "$S/etc" "$S/state" "$S/spool" "$R"
  chmod 700 "$S/etc"
  local names; names=$(loopback_names)
  [ -n "$names" ] || { log "no host name resolves to 127.x (not even localhost)"; return 1; }
  echo "$names" >"$S/etc/nodes"
  [ -f "$S/etc/munge.key" ] || { dd if=/dev/urandom of="$S/etc/munge.key" bs=1024 count=1 2>/dev/null; }
  chmod 400 "$S/etc/munge.key"
  [ -f "$S/etc/db.pass" ] || { head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$S/etc/db.pass"; }
  chmod 600 "$S/etc/db.pass"
  local i=0 node_lines="" n
  for n in $names; do
    mkdir -p "$S/spool/$n"
    node_lines+="NodeName=$n NodeHostname=$n NodeAddr=127.0.0.1 Port=$((NODE_PORT + i)) CPUs=$NODE_CPUS RealMemory=$NODE_MEM State=UNKNOWN"$'\n'
    i=$((i + 1))
  done
  cat >"$CONF" <<EOF
# written by scripts/infra/slurm.sh (torchx-flow); rewritten on every start
ClusterName=torchxflow
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$R/munge.sock,cred_expire=10
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$R/slurmctld.pid
SlurmdPidFile=$R/slurmd-%n.pid
SlurmctldLogFile=$R/slurmctld.log
SlurmdLogFile=$R/slurmd-%n.log
PlugStackConfig=$S/etc/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_min_interval=100000
JobAcctGatherType=jobacct_gather/none
AccountingStoreFlags=job_comment
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$R/munge.sock
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
JobRequeue=1
MinJobAge=300
KillWait=5
InactiveLimit=0
SlurmdTimeout=60
$node_lines
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  : >"$S/etc/plugstack.conf"
  cat >"$S/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$R/munge.sock,cred_expire=10
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$R/slurmdbd.pid
LogFile=$R/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$(cat "$S/etc/db.pass")
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$S/etc/slurmdbd.conf"
}

start_munge() {
  [ -f "$R/munged.pid" ] && kill -0 "$(cat "$R/munged.pid")" 2>/dev/null && return 0
  munged --force --socket="$R/munge.sock" --key-file="$S/etc/munge.key" \
    --pid-file="$R/munged.pid" --log-file="$R/munged.log" --seed-file="$S/munged.seed" \
    || return 1
  wait_for 10 test -S "$R/munge.sock"
}

mysql_cmd() { mariadb --no-defaults --protocol=socket --socket="$R/mysqld.sock" -uroot "$@"; }

start_db() {
  if [ ! -d "$S/db/mysql" ]; then
    log "creating the accounting database in $S/db"
    mkdir -p "$S/db"
    mariadb-install-db --no-defaults --datadir="$S/db" --user=root \
      --auth-root-authentication-method=socket >"$R/db-init.log" 2>&1 \
      || { log "mariadb-install-db failed: see $R/db-init.log"; return 1; }
  fi
  if ! { [ -f "$R/mysqld.pid" ] && kill -0 "$(cat "$R/mysqld.pid")" 2>/dev/null; }; then
    setsid mariadbd --no-defaults --user=root --datadir="$S/db" --bind-address=127.0.0.1 \
      --port=$DB_PORT --socket="$R/mysqld.sock" --pid-file="$R/mysqld.pid" \
      --log-error="$R/mysqld.log" --skip-name-resolve --innodb-buffer-pool-size=32M \
      --performance-schema=OFF </dev/null >/dev/null 2>&1 &
    wait_for 60 mysql_cmd -e "select 1" || { log "MariaDB did not start: see $R/mysqld.log"; return 1; }
  fi
  local pass; pass=$(cat "$S/etc/db.pass")
  mysql_cmd -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
    ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
}

start_daemon() {  # start_daemon PIDFILE LOG CMD...: runs CMD (which daemonizes) unless it runs
  local pidf=$1 logf=$2; shift 2
  [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null && return 0
  "$@" >>"$logf" 2>&1 || { log "$1 failed to start: see $logf"; return 1; }
  wait_for 20 bash -c "[ -f '$pidf' ] && kill -0 \$(cat '$pidf')" || { log "$1 did not stay up: see $logf"; return 1; }
}

all_idle() {
  local want have
  want=$(wc -w <"$S/etc/nodes")
  have=$(sinfo -h -N -o '%N %T' 2>/dev/null | grep -c -E ' (idle|mixed|allocated)$')
  [ "$have" -ge "$want" ]
}

cmd_start() {
  if cmd_env 2>/dev/null; then return 0; fi
  apt_install slurmctld slurmd slurm-client slurmdbd munge mariadb-server mariadb-client \
    || return 1
  write_config || return 1
  start_munge || { log "munged did not start: see $R/munged.log"; return 1; }
  start_db || return 1
  start_daemon "$R/slurmdbd.pid" "$R/slurmdbd.out" slurmdbd || return 1
  wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$DBD_PORT" || { log "slurmdbd does not answer: see $R/slurmdbd.log"; return 1; }
  if ! timeout 10 sacctmgr -n list cluster format=cluster 2>/dev/null | grep -qw torchxflow; then
    timeout 20 sacctmgr -i add cluster torchxflow >/dev/null || { log "sacctmgr add cluster failed"; return 1; }
  fi
  start_daemon "$R/slurmctld.pid" "$R/slurmctld.out" slurmctld || return 1
  wait_for 30 answers || { log "slurmctld does not answer: see $R/slurmctld.log"; return 1; }
  local n
  for n in $(nodes); do
    start_daemon "$R/slurmd-$n.pid" "$R/slurmd-$n.out" slurmd -N "$n" || return 1
  done
  wait_for 60 all_idle || { log "nodes not idle: $(sinfo -h -N -o '%N %T' | tr '\n' ' ')"; return 1; }
  log "Slurm up: nodes $(nodes) ($NODE_CPUS CPUs, $NODE_MEM MB each), accounting in MariaDB"
  echo "SLURM_CONF=$CONF"
}

cmd_stop() {
  if [ -f "$CONF" ] && answers; then
    timeout 10 scancel --full --cluster=torchxflow --state=RUNNING >/dev/null 2>&1 || true
    timeout 10 scancel --cluster=torchxflow -u root >/dev/null 2>&1 || true
    wait_for 20 bash -c '[ -z "$(squeue -h -t PD,R,CG,S,CF,RQ,RS,SE -o %i)" ]' || true
  fi
  local n
  for n in $(nodes); do stop_pidfile "$R/slurmd-$n.pid"; done
  stop_pidfile "$R/slurmctld.pid"
  stop_pidfile "$R/slurmdbd.pid"
  stop_pidfile "$R/mysqld.pid"
  stop_pidfile "$R/munged.pid"
  rm -f "$R/munge.sock" "$R/mysqld.sock"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) cmd_env ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
