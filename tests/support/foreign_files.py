"""Other tools' files that share our file names: `*.agent.yaml` persona files in the shape of BMAD-METHOD's
agents, an Ansible role's `templates/*.j2`, Oxy's `*.agent.yml` agents. None of them is an oscova workspace;
each is written here in the shape those projects use."""

from __future__ import annotations

BMAD = {
    "bmad/bmm/agents/analyst.agent.yaml": """\
agent:
  metadata:
    id: bmad/bmm/agents/analyst.md
    name: Mary
    title: Business Analyst
    icon: 📊
    module: bmm
  persona:
    role: Strategic Business Analyst + Requirements Expert
    identity: Senior analyst with deep expertise in market research and competitive analysis.
    communication_style: Systematic and probing. Connects dots others miss.
    principles:
      - Every business challenge has root causes waiting to be discovered.
      - Ground findings in verifiable evidence.
  critical_actions:
    - "Load into memory {project-root}/bmad/bmm/config.yaml and set variable project_name"
    - "Remember the user's name is {user_name}"
  menu:
    - trigger: workflow-status
      workflow: "{project-root}/bmad/bmm/workflows/workflow-status/workflow.yaml"
      description: Check workflow status and get recommendations
    - trigger: brainstorm-project
      exec: "{project-root}/bmad/core/workflows/brainstorming/workflow.yaml"
      description: Guide me through Brainstorming
""",
    "bmad/bmm/agents/dev.agent.yaml": """\
agent:
  metadata:
    id: bmad/bmm/agents/dev-impl.md
    name: Amelia
    title: Developer Agent
    icon: 💻
    module: bmm
  persona:
    role: Senior Implementation Engineer
    identity: Executes approved stories with strict adherence to acceptance criteria.
    communication_style: Succinct, checklist-driven.
    principles:
      - The Story File is the single source of truth.
  menu:
    - trigger: develop-story
      workflow: "{project-root}/bmad/bmm/workflows/4-implementation/dev-story/workflow.yaml"
      description: Execute Dev Story workflow
""",
    "bmad/core/tasks/workflow.xml": "<task id=\"bmad/core/tasks/workflow.xml\" name=\"Execute Workflow\"/>\n",
    "README.md": "# A BMAD project\n",
}

ANSIBLE = {
    "roles/nginx/defaults/main.yml": """\
nginx_user: www-data
nginx_worker_processes: auto
nginx_vhosts: []
""",
    "roles/nginx/tasks/main.yml": """\
- name: Copy nginx configuration in place.
  ansible.builtin.template:
    src: nginx.conf.j2
    dest: /etc/nginx/nginx.conf
    mode: "0644"
""",
    "roles/nginx/templates/nginx.conf.j2": """\
user  {{ nginx_user }};
worker_processes  {{ nginx_worker_processes }};
{% if nginx_extra_conf_options %}
{{ nginx_extra_conf_options }}
{% endif %}
events {
    worker_connections  {{ nginx_worker_connections | default(1024) }};
}
http {
{% for vhost in nginx_vhosts %}
    server {
        listen {{ vhost.listen | default('80') }};
        server_name {{ vhost.server_name }};
        root {{ vhost.root }};
    }
{% endfor %}
{% if ansible_os_family == "Debian" %}
    include /etc/nginx/sites-enabled/*;
{% endif %}
}
""",
    "roles/nginx/templates/vhost.j2": """\
{% for vhost in nginx_vhosts %}
server {
    listen {{ vhost.listen | default('80' + default_server) }};
    server_name {{ vhost.server_name }};
    access_log {{ vhost.access_log | default(nginx_access_log) }};
}
{% endfor %}
""",
}

OXY = {
    "agents/sql.agent.yml": """\
model: "openai-4o-mini"
system_instructions: |
  You are a data analyst expert. Your task is to help the user generate reports.
  {{ tools }}
  Today is {{ date }}.
tools:
  - name: execute_sql
    type: execute_sql
    database: local
""",
    "agents/retrieval.agent.yml": """\
model: "openai-4o-mini"
system_instructions: |
  Answer with the documents: {{ context }}
context:
  - name: queries
    type: file
    src:
      - "queries/*.sql"
""",
    "config.yml": "databases:\n  - name: local\n    type: duckdb\n",
}
