"""The redactor against secret families by structure (issue 32, must 2), line by line: password-position flags of
any command-line tool, connection strings, YAML nesting and block scalars, URL and form encoding, JSON / Python repr
/ XML / gRPC metadata inside log lines, HTTP authorization schemes and vendor key headers, Kubernetes Secrets, cloud
and registry logins. None of these shapes is in the other secret tests; each secret is a value no entropy test
would catch (short, word-like), so a pass means the structure was recognised. And the other way: revisions,
digests and numbers under credential-looking names are kept."""
from __future__ import annotations

import pytest

from diagnose.reports import redact

# family -> [(text, the secret in it)]
FAMILIES: dict[str, list[tuple[str, str]]] = {
    "password flags": [
        ("mysql -h db -u root -p Tr0ubadorA analytics", "Tr0ubadorA"),
        ("mysqldump -uroot -pTr0ubadorB analytics > dump.sql", "Tr0ubadorB"),
        ("sqlcmd -S tcp:db,1433 -U sa -P Tr0ubadorC -Q 'select 1'", "Tr0ubadorC"),
        ("ldapsearch -x -H ldap://ldap -D cn=admin,dc=ex -w Tr0ubadorD -b dc=ex", "Tr0ubadorD"),
        ("smbclient //fs/share -U alice%Tr0ubadorE -c ls", "Tr0ubadorE"),
        ("keytool -importkeystore -srcstorepass Tr0ubadorF -deststorepass Tr0ubadorF2", "Tr0ubadorF"),
        ("lftp -u alice,Tr0ubadorG sftp://files", "Tr0ubadorG"),
        ("mongo admin --username root --password Tr0ubadorH", "Tr0ubadorH"),
        ("poetry config http-basic.private alice Tr0ubadorI", "Tr0ubadorI"),
        ("htpasswd -b -c /etc/nginx/.htpasswd alice Tr0ubadorJ", "Tr0ubadorJ"),
        ("rclone config create s3x s3 access_key_id AKIDX secret_access_key Tr0ubadorK", "Tr0ubadorK"),
        ("docker login -u alice -p Tr0ubadorL registry.example.com", "Tr0ubadorL"),
        ("az login --service-principal -u app-id -p Tr0ubadorM --tenant t", "Tr0ubadorM"),
        ("psql 'host=db user=alice password=Tr0ubadorN dbname=x'", "Tr0ubadorN"),
        ("wget --user=alice --password=Tr0ubadorO https://files/x.tar", "Tr0ubadorO"),
        ("git clone https://alice:Tr0ubadorP@git.example.com/team/repo.git", "Tr0ubadorP"),
        ("./deploy.sh --db-pass Tr0ubadorQ --region eu", "Tr0ubadorQ"),
        ("vault login -method=userpass username=alice password=Tr0ubadorR", "Tr0ubadorR"),
        ("openssl pkcs12 -export -in c.pem -passout pass:Tr0ubadorS -out c.p12", "Tr0ubadorS"),
        ("cmd --auth alice:Tr0ubadorT", "Tr0ubadorT"),
    ],
    "connection strings": [
        ("jdbc:sqlserver://db:1433;databaseName=x;user=sa;password=Tr0ubadorCA;encrypt=true", "Tr0ubadorCA"),
        ("Server=tcp:db,1433;Initial Catalog=x;User ID=sa;Password=Tr0ubadorCB;", "Tr0ubadorCB"),
        ("Data Source=db;Uid=sa;Pwd=Tr0ubadorCC;", "Tr0ubadorCC"),
        ('DB_CONN="Host=db;Username=alice;Password=Tr0ubadorCD;Database=x"', "Tr0ubadorCD"),
        ("mongodb+srv://alice:Tr0ubadorCE@cluster0.example.net/db?retryWrites=true", "Tr0ubadorCE"),
        ("alice:Tr0ubadorCF@tcp(db:3306)/training?parseTime=true", "Tr0ubadorCF"),
        ("mysql://alice:Tr0ubadorCG@tcp(db:3306)/training", "Tr0ubadorCG"),
        ("sqlplus scott/Tr0ubadorCH@//db:1521/orcl", "Tr0ubadorCH"),
        ("amqp://guest:Tr0ubadorCI@rabbit:5672/%2f", "Tr0ubadorCI"),
        ("jdbc:postgresql://db/x?user=alice&password=Tr0ubadorCJ", "Tr0ubadorCJ"),
        ("AZURE_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=https;AccountName=a;AccountKey=Tr0ubadorCK'",
         "Tr0ubadorCK"),
    ],
    "yaml nesting and block scalars": [
        ("wandb:\n  api_key: Tr0ubadorYA\n  project: x", "Tr0ubadorYA"),
        ("credentials:\n  user: alice\n  secret: Tr0ubadorYB", "Tr0ubadorYB"),
        ("password: |\n  Tr0ubadorYC\nother: 1", "Tr0ubadorYC"),
        ("token: >-\n  Tr0ubadorYD\n  continued\nother: 1", "Tr0ubadorYD"),
        ("secrets:\n  - Tr0ubadorYE\n  - second", "Tr0ubadorYE"),
        ("hub:\n  token:\n    value: Tr0ubadorYF", "Tr0ubadorYF"),
        ("auth:\n  basic:\n    alice: Tr0ubadorYG", "Tr0ubadorYG"),
        ("- name: HF_TOKEN\n  value: Tr0ubadorYH", "Tr0ubadorYH"),
    ],
    "url and form encoding": [
        ("POST /login body=username%3Dalice%26password%3DTr0ubadorUA", "Tr0ubadorUA"),
        ("-d 'grant_type=password&username=alice&password=Tr0ubadorUB'", "Tr0ubadorUB"),
        ("redirect=https%3A%2F%2Fapp%2Fcb%3Ftoken%3DTr0ubadorUC%26x%3D1", "Tr0ubadorUC"),
        ("https://api.example.com/v1?client_secret=Tr0ubadorUD&scope=all", "Tr0ubadorUD"),
        ("https://alice:Tr0ubador%40UE@files.example.com/x", "Tr0ubador%40UE"),
        ("api%5Fkey=Tr0ubadorUF&page=2", "Tr0ubadorUF"),
        ("data-urlencode 'access_token=Tr0ubadorUG'", "Tr0ubadorUG"),
    ],
    "structured data inside log lines": [
        ('INFO request {"user": "alice", "password": "Tr0ubadorJA"}', "Tr0ubadorJA"),
        ('payload="{\\"api_key\\": \\"Tr0ubadorJB\\", \\"n\\": 1}"', "Tr0ubadorJB"),
        ("Namespace(hub_token='Tr0ubadorJC', seed=42)", "Tr0ubadorJC"),
        ("argv=['train.py', '--hub_token', 'Tr0ubadorJD', '--bf16']", "Tr0ubadorJD"),
        ("metadata=[('authorization', 'Bearer Tr0ubadorJE'), ('x-trace', '1')]", "Tr0ubadorJE"),
        ("(('x-api-key', 'Tr0ubadorJF'),)", "Tr0ubadorJF"),
        ("<password>Tr0ubadorJG</password>", "Tr0ubadorJG"),
        ('<add key="ApiKey" value="Tr0ubadorJH" />', "Tr0ubadorJH"),
        ('<entry name="token">Tr0ubadorJI</entry>', "Tr0ubadorJI"),
        ('<Credentials user="alice" password="Tr0ubadorJJ"/>', "Tr0ubadorJJ"),
        ("{'Authorization': 'token Tr0ubadorJK'}", "Tr0ubadorJK"),
    ],
    "http headers": [
        ("Authorization: Negotiate Tr0ubadorHA", "Tr0ubadorHA"),
        ('Authorization: Digest username="alice", response="Tr0ubadorHB"', "Tr0ubadorHB"),
        ("Proxy-Authorization: Basic Tr0ubadorHC", "Tr0ubadorHC"),
        ("curl -H 'Authorization: ApiKey Tr0ubadorHD' https://x", "Tr0ubadorHD"),
        ("Ocp-Apim-Subscription-Key: Tr0ubadorHE", "Tr0ubadorHE"),
        ("PRIVATE-TOKEN: Tr0ubadorHF", "Tr0ubadorHF"),
        ("DD-API-KEY: Tr0ubadorHG", "Tr0ubadorHG"),
        ("X-Vault-Token: Tr0ubadorHH", "Tr0ubadorHH"),
        ("authorization=Bearer%20Tr0ubadorHI", "Tr0ubadorHI"),
    ],
    "kubernetes": [
        ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  username: Tr0ubadorKA\n  host: Tr0ubadorKB",
         "Tr0ubadorKA"),
        ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  username: Tr0ubadorKA\n  host: Tr0ubadorKB",
         "Tr0ubadorKB"),
        ("stringData:\n  config.ini: Tr0ubadorKC\n  other: x", "Tr0ubadorKC"),
        ("kubectl create secret generic s --from-literal=api=Tr0ubadorKD", "Tr0ubadorKD"),
        ("env:\n- name: DB_PASSWORD\n  value: Tr0ubadorKE", "Tr0ubadorKE"),
    ],
    "cloud and registries": [
        ("npm config set //registry.npmjs.org/:_authToken Tr0ubadorRA", "Tr0ubadorRA"),
        ("//registry.npmjs.org/:_authToken=Tr0ubadorRB", "Tr0ubadorRB"),
        ("poetry config pypi-token.pypi Tr0ubadorRC", "Tr0ubadorRC"),
        ("cargo login Tr0ubadorRD", "Tr0ubadorRD"),
        ("helm registry login ghcr.io -u alice -p Tr0ubadorRE", "Tr0ubadorRE"),
        ("twine upload -u __token__ -p Tr0ubadorRF dist/*", "Tr0ubadorRF"),
        ("aws configure set aws_secret_access_key Tr0ubadorRG", "Tr0ubadorRG"),
        ("GOOGLE_OAUTH_ACCESS_TOKEN=ya29.Tr0ubadorRH", "Tr0ubadorRH"),
        ("s3cmd --access_key=AK --secret_key=Tr0ubadorRI ls", "Tr0ubadorRI"),
        ("oss_access_key_secret: Tr0ubadorRJ", "Tr0ubadorRJ"),
        ("huggingface-cli login --token Tr0ubadorRK", "Tr0ubadorRK"),
        ('"auths": {"ghcr.io": {"auth": "Tr0ubadorRL"}}', "Tr0ubadorRL"),
    ],
}

# Values a report needs that names may make look secret: revisions, digests, numbers, paths, advice.
KEPT: list[tuple[str, str]] = [
    ("commit: 9fceb02d0ae598e95dc970b74767f19372d61af8", "9fceb02d0ae598e95dc970b74767f19372d61af8"),
    ("git_sha=9fceb02d0ae598e95dc970b74767f19372d61af8", "9fceb02d0ae598e95dc970b74767f19372d61af8"),
    ("revision 9fceb02d0ae598e95dc970b74767f19372d61af8", "9fceb02d0ae598e95dc970b74767f19372d61af8"),
    ("image@sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
     "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"),
    ("digest: 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
     "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"),
    ("--revision 9fceb02d0ae598e95dc970b74767f19372d61af8", "9fceb02d0ae598e95dc970b74767f19372d61af8"),
    ("TOKEN_BUDGET=4096", "4096"),
    ("max_tokens: 2048", "2048"),
    ("--key-file /etc/ssl/key.pem", "/etc/ssl/key.pem"),
    ("ssh -p 2222 node2", "2222"),
    ("torchrun -p 29500 train.py", "29500"),
    ("mkdir -p /tmp/run", "/tmp/run"),
    ("python train.py -w 8", "8"),
    ("mysql -p $MYSQL_PWD analytics", "$MYSQL_PWD"),
    ("CUDA_VISIBLE_DEVICES=0 python3.11 train.py -a adamw -w warmup", "adamw"),  # a launch line's options
    ("torchrun --nproc_per_node 8 pretrain.py -p bf16", "bf16"),
    ("./prepare -p settings.yaml", "settings.yaml"),  # a file name
    ("deepspeed --num_gpus 8 train.py", "8"),
    ("wandb:\n  project: llm\n  entity: team", "llm"),
    ("pad_token: <pad>", "<pad>"),
]


CASES = [(family, text, secret) for family, cases in FAMILIES.items() for text, secret in cases]


@pytest.mark.parametrize("family,text,secret", CASES, ids=[f"{f}:{i}" for i, (f, _, _) in enumerate(CASES)])
def test_a_secret_of_each_family_is_masked(family: str, text: str, secret: str) -> None:
    out = redact.text(text)
    assert secret not in out, f"{family}: {out!r}"
    assert redact.MASK in out


@pytest.mark.parametrize("text,value", KEPT)
def test_revisions_digests_and_numbers_are_kept(text: str, value: str) -> None:
    assert value in redact.text(text)


def test_every_family_of_the_issue_is_tested() -> None:
    assert len(FAMILIES) == 8 and all(len(cases) >= 5 for cases in FAMILIES.values())
