"""A user's script, type-checked by test_typing.py with `mypy --strict`: every line
marked ``# error: CODE`` is a deliberate mistake mypy must report, and nothing else."""

from concurrent.futures import Future

from smcp_sync import Agent, CallToolResult, Computer, DPEElementDetail, DPEPage, SMCPServer, TextContent


def use_agent(agent: Agent) -> str:
    future = agent.submit_tool_call("computer", "tool", {"a": 1})
    result: CallToolResult = future.result(timeout=5)
    as_future: Future[CallToolResult] = future
    request_id: str = future.req_id
    count: int = future.result()  # error: assignment
    agent.connect(8000)  # error: arg-type
    agent.call_tool("computer", "tool", timeout="soon")  # error: arg-type
    agent.no_such_method()  # error: attr-defined
    return request_id + str(result.is_error) + str(as_future.done()) + str(count)


def read_finder(agent: Agent) -> str:
    page: DPEPage = agent.read_page("computer", "dpe://host/doc", 0)
    rendered: str = agent.read_page("computer", "dpe://host/doc", 0, format="markdown")
    detail: DPEElementDetail = agent.read_element("computer", page.uri, "e1")
    wrong: DPEPage = agent.read_page("computer", page.uri, 1, format="text")  # error: assignment
    return rendered + str(detail) + str(wrong)


def use_computer(computer: Computer) -> int:
    return computer.tools()  # error: return-value


def build_models() -> CallToolResult:
    TextContent(text=1)  # error: arg-type
    return CallToolResult(content=[TextContent(text="fine")])  # optional fields need not be given


def use_server() -> None:
    SMCPServer(request_timeout="soon")  # error: arg-type
